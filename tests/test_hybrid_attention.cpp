// Hybrid attention (mixers/hybrid_attention.h): the three forms agree with a plain double
// reference written from the header's formula, step() equals forward(), and the limits reduce to
// the mixers they generalise (softmax attention inside the window, linear attention without it).
#include "seqlab/mixers/hybrid_attention.h"

#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/rope.h"
#include "seqlab/mixers/softmax_attention.h"

#include "mixer_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;
using Form = HybridAttentionImpl::Form;

namespace {

struct Case {
  int64_t window;
  double decay;
  std::string gate, map;
  int64_t chunk;
  bool rope_gqa;
};

MixerConfig config_for(const Case& k) {
  auto c = small_config("hybrid");
  c.window = k.window;
  c.decay = k.decay;
  c.gate = k.gate;
  c.feature_map = k.map;
  c.chunk_size = k.chunk;
  if (k.rope_gqa) {
    c.rope = true;
    c.n_head = 4;
    c.n_kv_head = 2;
  }
  c.validate();
  return c;
}

// Random window factors and gate biases, so that the mixture is not the symmetric 1/2 it starts as.
void perturb(HybridAttentionImpl& m) {
  torch::NoGradGuard ng;
  if (m.window_factor.defined()) m.window_factor.normal_(0, 1);
  if (m.gate_bias.defined()) m.gate_bias.normal_(1, 1);
}

// The header's formula, loop by loop in double.
torch::Tensor reference(HybridAttentionImpl& m, const torch::Tensor& x) {
  const auto& c = m.config();
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), H = c.n_head, G = c.kv_heads();
  const int64_t Dh = D / H, W = c.window, rep = H / G;
  auto heads = [&](const torch::Tensor& p, int64_t n) { return p.view({B, T, n, Dh}).transpose(1, 2); };
  auto k_raw = heads(m.k(x), G);
  auto qh = apply_rope(c, heads(m.q(x), H), 0);
  auto kh = repeat_kv(apply_rope(c, k_raw, 0), rep);
  auto fq = m.feature_map->forward(qh, true).to(torch::kDouble).contiguous();
  auto fk = m.feature_map->forward(kh, false).to(torch::kDouble).contiguous();
  auto qd = qh.to(torch::kDouble).contiguous(), kd = kh.to(torch::kDouble).contiguous();
  auto vd = repeat_kv(heads(m.v(x), G), rep).to(torch::kDouble).contiguous();
  auto pooled = k_raw.to(torch::kDouble).mean(-1).contiguous();  // [B,G,T]
  auto y = torch::zeros({B, H, T, Dh}, torch::kDouble);
  const int64_t F = fq.size(3);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> g(T), cum(T);
      for (int64_t t = 0; t < T; ++t) {
        g[t] = std::log(c.decay);
        if (c.gate == "key") {
          const double l = pooled[b][h / rep][t].item<double>() + m.gate_bias[h].item<double>();
          g[t] += -std::log1p(std::exp(-l)) / HybridAttentionImpl::kGateNorm;
        }
        cum[t] = g[t] + (t ? cum[t - 1] : 0.0);
      }
      const double f = W ? 1 / (1 + std::exp(-m.window_factor[h].item<double>())) : 0;
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> a(t + 1, 0.0);
        double mx = -1e300;
        for (int64_t j = std::max<int64_t>(0, t - W + 1); j <= t && W; ++j) {
          double s = 0;
          for (int64_t d = 0; d < Dh; ++d) s += qd[b][h][t][d].item<double>() * kd[b][h][j][d].item<double>();
          a[j] = s / std::sqrt(static_cast<double>(Dh));
          mx = std::max(mx, a[j]);
        }
        for (int64_t j = std::max<int64_t>(0, t - W + 1); j <= t && W; ++j) a[j] = f * std::exp(a[j] - mx);
        for (int64_t j = 0; j <= t - W; ++j) {
          double s = 0;
          for (int64_t e = 0; e < F; ++e) s += fq[b][h][t][e].item<double>() * fk[b][h][j][e].item<double>();
          a[j] = (W ? 1 - f : 1.0) * std::exp(cum[t] - cum[j]) * s;
        }
        double den = HybridAttentionImpl::kEps;
        for (int64_t j = 0; j <= t; ++j) den += a[j];
        for (int64_t d = 0; d < Dh; ++d) {
          double num = 0;
          for (int64_t j = 0; j <= t; ++j) num += a[j] * vd[b][h][j][d].item<double>();
          y[b][h][t][d] = num / den;
        }
      }
    }
  return m.o(y.transpose(1, 2).reshape({B, T, D}).to(torch::kFloat));
}

const std::vector<Case> kCases = {
    {0, 1.0, "none", "hedgehog", 4, false},  {0, 0.9, "key", "t2r", 5, false},
    {3, 1.0, "none", "hedgehog", 4, false},  {3, 0.95, "none", "elu1", 2, false},
    {5, 1.0, "key", "hedgehog", 5, true},    {8, 0.9, "key", "relu", 3, true},
    {1, 1.0, "none", "t2r", 7, false},       {13, 1.0, "none", "hedgehog", 4, false},
};

std::string name_of(const Case& k) {
  return fmt::format("W={} decay={} gate={} map={} C={} rope_gqa={}", k.window, k.decay, k.gate,
                     k.map, k.chunk, k.rope_gqa);
}

}  // namespace

TEST(HybridAttention, FormsMatchThePlainReference) {
  torch::NoGradGuard ng;
  for (const auto& k : kCases) {
    torch::manual_seed(5);
    HybridAttentionImpl m(config_for(k));
    perturb(m);
    auto x = torch::randn({2, 13, m.config().d_model});
    auto ref = reference(m, x);
    for (auto [form, what] : {std::pair{Form::quadratic, "quadratic"},
                              std::pair{Form::chunked, "chunked"},
                              std::pair{Form::recurrent, "recurrent"}})
      EXPECT_TRUE(all_close(m.forward_form(x, form), ref, 1e-5, what)) << name_of(k);
  }
}

TEST(HybridAttention, StepMatchesForward) {
  for (const auto& k : kCases) {
    torch::manual_seed(6);
    HybridAttentionImpl m(config_for(k));
    perturb(m);
    EXPECT_TRUE(step_matches_forward(m, 2, 17)) << name_of(k);
  }
}

TEST(HybridAttention, IsCausalInEveryForm) {
  torch::NoGradGuard ng;
  torch::manual_seed(7);
  HybridAttentionImpl m(config_for({3, 0.9, "key", "hedgehog", 4, false}));
  auto x = torch::randn({2, 13, 16});
  for (auto form : {Form::quadratic, Form::chunked, Form::recurrent})
    EXPECT_TRUE(is_causal([&](const torch::Tensor& in) { return m.forward_form(in, form); }, x, 6,
                          0, 1e-6));
}

TEST(HybridAttention, AWindowCoveringTheSequenceIsSoftmaxAttention) {
  // W >= T and f -> 1: every key is in the window, the linear part has no keys.
  torch::NoGradGuard ng;
  torch::manual_seed(8);
  auto c = config_for({16, 1.0, "none", "hedgehog", 4, false});
  HybridAttentionImpl h(c);
  h.window_factor.fill_(40.0);  // sigmoid = 1 in fp32
  auto sc = small_config("softmax");
  SoftmaxAttentionImpl s(sc);
  for (const char* n : {"q", "k", "v", "o"}) {
    s.named_parameters()[std::string(n) + ".weight"].copy_(h.named_parameters()[std::string(n) + ".weight"]);
    s.named_parameters()[std::string(n) + ".bias"].copy_(h.named_parameters()[std::string(n) + ".bias"]);
  }
  auto x = torch::randn({2, 12, 16});
  EXPECT_TRUE(all_close(h.forward(x), s.forward(x), 1e-5, "hybrid W >= T vs softmax"));
}

TEST(HybridAttention, NoWindowNoDecayIsLinearAttention) {
  torch::NoGradGuard ng;
  torch::manual_seed(9);
  HybridAttentionImpl h(config_for({0, 1.0, "none", "t2r", 4, false}));
  auto lc = small_config("linear");
  lc.feature_map = "t2r";
  lc.validate();
  LinearAttentionImpl l(lc);
  auto hp = h.named_parameters();
  for (auto& p : l.named_parameters()) p.value().copy_(hp[p.key()]);
  auto x = torch::randn({2, 12, 16});
  EXPECT_TRUE(all_close(h.forward(x), l.forward(x), 1e-5, "hybrid W=0 vs linear"));
}

TEST(HybridAttention, StateIsConstantInTheContext) {
  torch::manual_seed(10);
  HybridAttentionImpl m(config_for({5, 0.9, "key", "hedgehog", 4, true}));
  auto s = m.init_state(2);
  int64_t before = 0;
  s->for_each([&](const std::string&, torch::Tensor& t) { before += t.numel(); });
  torch::NoGradGuard ng;
  for (int i = 0; i < 30; ++i) m.step(torch::randn({2, 16}), *s);
  int64_t after = 0;
  s->for_each([&](const std::string&, torch::Tensor& t) { after += t.numel(); });
  EXPECT_EQ(before, after);
  EXPECT_EQ(state_names(*s), (std::vector<std::string>{"S", "z", "keys", "vals", "gates", "pos"}));
}

TEST(HybridAttention, GradientsReachTheNewParameters) {
  torch::manual_seed(11);
  HybridAttentionImpl m(config_for({3, 1.0, "key", "hedgehog", 4, false}));
  m.forward(torch::randn({2, 9, 16})).square().sum().backward();
  ASSERT_TRUE(m.window_factor.grad().defined());
  ASSERT_TRUE(m.gate_bias.grad().defined());
  EXPECT_GT(m.window_factor.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(m.gate_bias.grad().abs().sum().item<double>(), 0);
  for (const auto& p : m.parameters()) EXPECT_TRUE(p.grad().isfinite().all().item<bool>());
}

TEST(HybridAttention, BadOptionsAreErrors) {
  auto c = small_config("hybrid");
  c.decay = 0;
  EXPECT_THROW(c.validate(), Error);
  c.decay = 1.5;
  EXPECT_THROW(c.validate(), Error);
  c = small_config("hybrid");
  c.window = c.max_len + 1;
  EXPECT_THROW(c.validate(), Error);
  c = small_config("hybrid");
  c.gate = "value";
  EXPECT_THROW(c.validate(), Error);
  c = small_config("linear");
  c.window = 4;
  EXPECT_THROW(c.validate(), Error);
  c = small_config("hybrid");
  c.causal = false;
  EXPECT_THROW(c.validate(), Error);
  c = small_config("hybrid");
  c.feature_map = "performer";
  c.validate();
  EXPECT_THROW(HybridAttentionImpl{c}, Error);
}
