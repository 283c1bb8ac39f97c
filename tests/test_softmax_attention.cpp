#include "seqlab/mixers/softmax_attention.h"

#include "seqlab/mixers/registry.h"

#include "mixer_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

namespace {
// Plain reference: loops over b, h, t, j in double; softmax(q.k / sqrt(Dh)) over j <= t (or all j).
torch::Tensor reference(SoftmaxAttentionImpl& m, const torch::Tensor& x, bool causal) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), H = m.config().n_head, Dh = D / H;
  auto q = m.q(x).to(torch::kDouble), k = m.k(x).to(torch::kDouble), v = m.v(x).to(torch::kDouble);
  auto y = torch::zeros({B, T, D}, torch::kDouble);
  auto qa = q.accessor<double, 3>(), ka = k.accessor<double, 3>(), va = v.accessor<double, 3>();
  auto ya = y.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = causal ? t + 1 : T;
        std::vector<double> s(n);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double d = 0;
          for (int64_t c = 0; c < Dh; ++c) d += qa[b][t][h * Dh + c] * ka[b][j][h * Dh + c];
          s[j] = d / std::sqrt(double(Dh));
          mx = std::max(mx, s[j]);
        }
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j < n; ++j)
          for (int64_t c = 0; c < Dh; ++c)
            ya[b][t][h * Dh + c] += s[j] / sum * va[b][j][h * Dh + c];
      }
  return m.o(y.to(torch::kFloat));
}
}  // namespace

TEST(SoftmaxAttention, StepMatchesForward) {
  torch::manual_seed(1);
  SoftmaxAttentionImpl m(small_config("softmax"));
  EXPECT_TRUE(step_matches_forward(m, 3, 13));
}

TEST(SoftmaxAttention, ForwardMatchesPlainReference) {
  torch::NoGradGuard ng;
  torch::manual_seed(2);
  for (bool causal : {true, false}) {
    auto c = small_config("softmax");
    c.causal = causal;
    SoftmaxAttentionImpl m(c);
    auto x = torch::randn({2, 9, 16});
    EXPECT_TRUE(all_close(m.forward(x), reference(m, x, causal), 1e-5,
                          causal ? "causal vs reference" : "bidirectional vs reference"));
  }
}

TEST(SoftmaxAttention, IsCausal) {
  torch::manual_seed(3);
  SoftmaxAttentionImpl m(small_config("softmax"));
  EXPECT_TRUE(is_causal(m, 2, 8, 5));
}

TEST(SoftmaxAttention, BidirectionalSeesTheFutureAndHasNoStep) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  auto c = small_config("softmax");
  c.causal = false;
  SoftmaxAttentionImpl m(c);
  auto x = torch::randn({2, 8, 16});
  EXPECT_TRUE(sees_the_future(m, x, 7));
  auto s = m.init_state(2);
  EXPECT_THROW(m.step(x.select(1, 0), *s), Error);
}

TEST(SoftmaxAttention, FullCacheIsAnErrorNamingMaxLen) {
  torch::NoGradGuard ng;
  auto c = small_config("softmax");
  c.max_len = 4;
  SoftmaxAttentionImpl m(c);
  auto s = m.init_state(1);
  for (int i = 0; i < 4; ++i) m.step(torch::randn({1, 16}), *s);
  try {
    m.step(torch::randn({1, 16}), *s);
    FAIL() << "stepping past max_len did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_len = 4"), std::string::npos) << e.what();
  }
}

TEST(SoftmaxAttention, StateShapesAndDtype) {
  SoftmaxAttentionImpl m(small_config("softmax"));
  auto s = m.init_state(3);
  auto& a = dynamic_cast<SoftmaxAttentionState&>(*s);
  EXPECT_EQ(a.k.sizes().vec(), (std::vector<int64_t>{3, 2, 64, 8}));
  EXPECT_EQ(a.v.sizes().vec(), (std::vector<int64_t>{3, 2, 64, 8}));
  EXPECT_EQ(a.k.scalar_type(), torch::kFloat);
  EXPECT_EQ(a.len.item<int64_t>(), 0);
  EXPECT_EQ(state_names(*s), (std::vector<std::string>{"k", "v", "len"}));
}

TEST(SoftmaxAttention, CloneIsDeepAndBranchesAgree) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  SoftmaxAttentionImpl m(small_config("softmax"));
  auto s = m.init_state(2);
  m.step(torch::randn({2, 16}), *s);
  auto c = s->clone();
  auto x = torch::randn({2, 16});
  auto y_orig = m.step(x, *s);
  auto& cs = dynamic_cast<SoftmaxAttentionState&>(*c);
  EXPECT_EQ(cs.len.item<int64_t>(), 1);
  EXPECT_EQ(cs.k.narrow(2, 1, 1).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(all_close(m.step(x, *c), y_orig, 0.0, "branch from the clone"));
}

TEST(SoftmaxAttention, ParameterNamesAreTheContract) {
  SoftmaxAttentionImpl m(small_config("softmax"));
  EXPECT_TRUE(parameters_are(
      m, {"q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias", "o.weight", "o.bias"}));
  EXPECT_TRUE(m.needs_positions());
}

TEST(SoftmaxAttention, RegistryBuildsIt) {
  auto m = make_mixer(small_config("softmax"));
  EXPECT_NE(dynamic_cast<SoftmaxAttentionImpl*>(m.get()), nullptr);
}

TEST(SoftmaxAttention, BlockedNoGradForwardMatchesTheFullOne) {
  // Without autograd forward_heads runs blocks of query rows against the keys they may see; with
  // it, one [B,H,T,T] product. Blocks of 1, 4 and 5 rows (T = 13: a short last block) and the
  // memory-sized default, causal and not, plain and with RoPE + grouped-query attention.
  torch::manual_seed(5);
  for (bool causal : {true, false})
    for (bool rope_gqa : {false, true}) {
      auto c = small_config("softmax");
      c.causal = causal;
      if (rope_gqa) {
        c.rope = true;
        c.n_kv_head = 1;
      }
      c.validate();
      SoftmaxAttentionImpl m(c);
      auto x = torch::randn({2, 13, 16});
      const auto full = m.forward(x).detach();
      for (int64_t rows : {1, 4, 5, 0}) {
        seqlab::detail::set_attention_query_block(rows);
        torch::NoGradGuard ng;
        EXPECT_TRUE(all_close(m.forward(x), full, 1e-6, "blocked vs full"))
            << "rows " << rows << " causal " << causal << " rope+gqa " << rope_gqa;
      }
      seqlab::detail::set_attention_query_block(0);
    }
}
