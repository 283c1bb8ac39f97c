// Linear attention's short convolution (--short-conv K, mixers/linear_attention.h): the forms and
// step() agree, the convolution is causal and reaches exactly K-1 tokens back, an identity kernel
// gives back plain linear attention, and the option is refused where it has no meaning.
#include "seqlab/mixers/linear_attention.h"

#include "seqlab/mixers/registry.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;
using Form = LinearAttentionImpl::Form;

namespace {
MixerConfig conv_config(int64_t K, const std::string& map = "elu1", int64_t kv_heads = 0) {
  auto c = small_config("linear");
  c.feature_map = map;
  c.short_conv = K;
  c.n_kv_head = kv_heads;
  c.validate();
  return c;
}
}  // namespace

TEST(LinearAttentionShortConv, StepMatchesForwardAcrossChunks) {
  for (int64_t K : {1, 2, 4}) {
    torch::manual_seed(3);
    LinearAttentionImpl m(conv_config(K));
    EXPECT_TRUE(step_matches_forward(m, 3, 13)) << "K = " << K;  // C = 5 does not divide 13
  }
  torch::manual_seed(4);
  LinearAttentionImpl gqa(conv_config(4, "performer", 1));  // grouped kv heads, offsets
  EXPECT_TRUE(step_matches_forward(gqa, 2, 11));
}

TEST(LinearAttentionShortConv, QuadraticChunkedRecurrentAgree) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  LinearAttentionImpl m(conv_config(4, "hedgehog"));
  auto x = torch::randn({2, 13, 16});
  auto quad = m.forward_form(x, Form::quadratic);
  EXPECT_TRUE(all_close(m.forward_form(x, Form::chunked), quad, 1e-5, "chunked vs quadratic"));
  EXPECT_TRUE(all_close(m.forward_form(x, Form::recurrent), quad, 1e-5, "recurrent vs quadratic"));
}

TEST(LinearAttentionShortConv, IdentityKernelIsPlainLinearAttention) {
  torch::NoGradGuard ng;
  torch::manual_seed(6);
  LinearAttentionImpl plain(conv_config(0));
  LinearAttentionImpl conv(conv_config(3));
  auto dst = conv.named_parameters();
  for (const auto& item : plain.named_parameters()) dst[item.key()].copy_(item.value());
  conv.set_identity_conv();  // the newest tap 1: out_t = in_t
  EXPECT_EQ(conv.conv->weight.select(2, 2).sum().item<double>(),
            static_cast<double>(conv.conv->weight.size(0)));
  EXPECT_EQ(conv.conv->weight.abs().sum().item<double>(),
            static_cast<double>(conv.conv->weight.size(0)));
  auto x = torch::randn({2, 9, 16});
  EXPECT_TRUE(all_close(conv.forward(x), plain.forward(x), 1e-6, "identity kernel vs none"));
}

TEST(LinearAttentionShortConv, ReachesExactlyKMinusOneTokensBack) {
  torch::NoGradGuard ng;
  torch::manual_seed(7);
  const int64_t K = 3, T = 8, t = 5;
  LinearAttentionImpl m(conv_config(K));
  // A kernel that reads only the oldest tap: the q, k, v at t are the projections of x_{t-K+1}.
  m.conv->weight.zero_();
  m.conv->weight.select(2, 0).fill_(1.0);
  auto x = torch::randn({1, T, 16});
  auto y = m.forward(x);
  // Output u then depends on x_0 .. x_{u-K+1} only: a change at t-K+1 first shows at output t.
  auto y2 = m.forward(changed_at(x, t - K + 1));
  EXPECT_GT((y2.select(1, t) - y.select(1, t)).abs().max().item<double>(), 1e-4);
  for (int64_t u = 0; u < t; ++u)
    EXPECT_LT((y2.select(1, u) - y.select(1, u)).abs().max().item<double>(), 1e-6)
        << "output " << u << " saw a token K-1 positions after it";
}

TEST(LinearAttentionShortConv, StateCarriesTheLastProjectionRows) {
  LinearAttentionImpl m(conv_config(4, "elu1", 1));
  auto s = m.init_state(3);
  auto& ls = static_cast<LinearAttentionState&>(*s);
  const int64_t C = 16 + 2 * 1 * 8;  // q [D] then k, v [G*Dh]
  EXPECT_EQ(ls.conv.sizes().vec(), (std::vector<int64_t>{3, 3, C}));
  EXPECT_EQ(ls.conv.dtype(), torch::kFloat);
  std::vector<std::string> names;
  s->for_each([&](const std::string& n, torch::Tensor&) { names.push_back(n); });
  EXPECT_EQ(names, (std::vector<std::string>{"S", "z", "m", "pos", "conv"}));
  EXPECT_TRUE(m.named_parameters().contains("conv.weight"));
  EXPECT_FALSE(m.named_parameters().contains("conv.bias"));

  LinearAttentionImpl plain(conv_config(0));  // no convolution: no parameter, no state entry
  EXPECT_FALSE(plain.named_parameters().contains("conv.weight"));
  EXPECT_FALSE(static_cast<LinearAttentionState&>(*plain.init_state(1)).conv.defined());
}

TEST(LinearAttentionShortConv, RefusedOutsideLinearAttention) {
  for (const std::string arch : {"softmax", "lstm", "mamba", "hybrid"}) {
    MixerConfig c;
    c.arch = arch;
    c.short_conv = 4;
    EXPECT_THROW(c.validate(), Error) << arch;
  }
  MixerConfig negative;
  negative.arch = "elu1";
  negative.short_conv = -1;
  EXPECT_THROW(negative.validate(), Error);
}
