#include "seqlab/mixers/linear_attention.h"

#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;
using Form = LinearAttentionImpl::Form;

namespace {
MixerConfig config_for(const std::string& map, bool causal = true) {
  auto c = small_config("linear");
  c.feature_map = map;
  c.causal = causal;
  c.validate();
  return c;
}

std::vector<std::string> map_names() {
  std::vector<std::string> n;
  for (const auto& e : feature_map_registry()) n.push_back(e.name);
  return n;
}

// Plain reference in double, from the map's own unshifted features: for each b, h, t,
//   y_t = sum_{j<=t} (phi(q_t).phi(k_j)) v_j / (sum_{j<=t} phi(q_t).phi(k_j) + eps).
torch::Tensor reference(LinearAttentionImpl& m, const torch::Tensor& x, bool causal) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), H = m.config().n_head, Dh = D / H;
  auto heads = [&](const torch::Tensor& p) { return p.view({B, T, H, Dh}).transpose(1, 2); };
  auto pq = m.feature_map->forward(heads(m.q(x)), true).to(torch::kDouble).contiguous();
  auto pk = m.feature_map->forward(heads(m.k(x)), false).to(torch::kDouble).contiguous();
  auto v = heads(m.v(x)).to(torch::kDouble).contiguous();
  auto y = torch::zeros({B, H, T, Dh}, torch::kDouble);
  auto qa = pq.accessor<double, 4>(), ka = pk.accessor<double, 4>();
  auto va = v.accessor<double, 4>();
  auto ya = y.accessor<double, 4>();
  const int64_t F = pq.size(3);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        double den = LinearAttentionImpl::kEps;
        for (int64_t j = 0; j < (causal ? t + 1 : T); ++j) {
          double a = 0;
          for (int64_t f = 0; f < F; ++f) a += qa[b][h][t][f] * ka[b][h][j][f];
          den += a;
          for (int64_t c = 0; c < Dh; ++c) ya[b][h][t][c] += a * va[b][h][j][c];
        }
        for (int64_t c = 0; c < Dh; ++c) ya[b][h][t][c] /= den;
      }
  return m.o(y.transpose(1, 2).reshape({B, T, D}).to(torch::kFloat));
}
}  // namespace

class LinearAttentionMap : public ::testing::TestWithParam<std::string> {};

TEST_P(LinearAttentionMap, StepMatchesForward) {
  torch::manual_seed(1);
  LinearAttentionImpl m(config_for(GetParam()));
  EXPECT_TRUE(step_matches_forward(m, 3, 13));  // T = 13 is not a multiple of C = 5
}

TEST_P(LinearAttentionMap, QuadraticChunkedRecurrentAgree) {
  torch::NoGradGuard ng;
  torch::manual_seed(2);
  for (int64_t C : {1, 5, 13, 20}) {
    auto c = config_for(GetParam());
    c.chunk_size = C;
    LinearAttentionImpl m(c);
    auto x = torch::randn({3, 13, 16});
    auto quad = m.forward_form(x, Form::quadratic);
    EXPECT_TRUE(all_close(m.forward_form(x, Form::chunked), quad, 1e-5, "chunked vs quadratic"))
        << "C = " << C;
    EXPECT_TRUE(all_close(m.forward_form(x, Form::recurrent), quad, 1e-5, "recurrent vs quadratic"))
        << "C = " << C;
  }
}

TEST_P(LinearAttentionMap, MatchesPlainReference) {
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  for (bool causal : {true, false}) {
    LinearAttentionImpl m(config_for(GetParam(), causal));
    auto x = torch::randn({2, 11, 16});
    auto ref = reference(m, x, causal);
    EXPECT_TRUE(all_close(m.forward(x), ref, 1e-4, "forward vs reference")) << "causal " << causal;
    EXPECT_TRUE(all_close(m.forward_form(x, Form::quadratic), ref, 1e-4, "quadratic vs reference"))
        << "causal " << causal;
  }
}

TEST_P(LinearAttentionMap, IsCausal) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  LinearAttentionImpl m(config_for(GetParam()));
  auto x = torch::randn({2, 13, 16});
  for (auto [form, name] :
       {std::pair{Form::quadratic, "quadratic"}, std::pair{Form::chunked, "chunked"},
        std::pair{Form::recurrent, "recurrent"}}) {
    auto f = [&, form = form](const torch::Tensor& v) { return m.forward_form(v, form); };
    EXPECT_TRUE(is_causal(f, x, 7)) << name << " form";
  }
}

TEST_P(LinearAttentionMap, BidirectionalSeesAllAndHasNoStep) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  LinearAttentionImpl m(config_for(GetParam(), false));
  auto x = torch::randn({2, 13, 16});
  EXPECT_TRUE(
      all_close(m.forward(x), m.forward_form(x, Form::quadratic), 1e-5, "state vs quadratic"));
  EXPECT_TRUE(sees_the_future(m, x, 12));
  auto s = m.init_state(2);
  EXPECT_THROW(m.step(x.select(1, 0), *s), Error);
  EXPECT_THROW(m.forward_form(x, Form::recurrent), Error);
}

TEST_P(LinearAttentionMap, StateIsFp32WithTheDocumentedShapes) {
  torch::NoGradGuard ng;
  torch::manual_seed(6);
  LinearAttentionImpl m(config_for(GetParam()));
  m.to(torch::kDouble);
  auto s = m.init_state(3);
  auto y = m.step(torch::randn({3, 16}, torch::kDouble), *s);
  EXPECT_EQ(y.scalar_type(), torch::kDouble);
  auto& ls = dynamic_cast<LinearAttentionState&>(*s);
  const int64_t F = m.feature_map->out_dim();
  EXPECT_EQ(ls.S.sizes().vec(), (std::vector<int64_t>{3, 2, F, 8}));
  EXPECT_EQ(ls.z.sizes().vec(), (std::vector<int64_t>{3, 2, F}));
  EXPECT_EQ(ls.m.sizes().vec(), (std::vector<int64_t>{3, 2}));
  s->for_each([](const std::string& n, torch::Tensor& t) {
    if (n == "pos")  // the token count (RoPE position) is an int64 scalar
      EXPECT_EQ(t.scalar_type(), torch::kLong);
    else
      EXPECT_EQ(t.scalar_type(), torch::kFloat) << n;
  });
}

TEST_P(LinearAttentionMap, CloneIsDeepAndBranchesAgree) {
  torch::NoGradGuard ng;
  torch::manual_seed(7);
  LinearAttentionImpl m(config_for(GetParam()));
  auto s = m.init_state(2);
  m.step(torch::randn({2, 16}), *s);
  auto c = s->clone();
  auto& cs = dynamic_cast<LinearAttentionState&>(*c);
  auto S_before = cs.S.clone();
  auto x = torch::randn({2, 16});
  auto y_orig = m.step(x, *s);
  EXPECT_TRUE(all_close(cs.S, S_before, 0.0, "clone untouched by the original's step"));
  EXPECT_TRUE(all_close(m.step(x, *c), y_orig, 0.0, "branch from the clone"));
}

TEST_P(LinearAttentionMap, ParameterNamesAreTheContract) {
  LinearAttentionImpl m(config_for(GetParam()));
  // The projections, plus whatever the feature map owns under its own prefix.
  EXPECT_TRUE(parameters_are(
      m, {"q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias", "o.weight", "o.bias"},
      /*others_under=*/"feature_map."));
  EXPECT_TRUE(m.needs_positions());
}

TEST_P(LinearAttentionMap, GradientsAreFinite) {
  torch::manual_seed(8);
  LinearAttentionImpl m(config_for(GetParam()));
  auto x = torch::randn({2, 13, 16});
  m.forward(x).square().sum().backward();
  for (const auto& kv : m.named_parameters()) {
    ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
    EXPECT_TRUE(torch::isfinite(kv.value().grad()).all().item<bool>()) << kv.key();
  }
}

INSTANTIATE_TEST_SUITE_P(AllMaps, LinearAttentionMap, ::testing::ValuesIn(map_names()));

TEST(LinearAttention, MapParameterNames) {
  LinearAttentionImpl t2r(config_for("t2r"));
  auto p = t2r.named_parameters();
  ASSERT_TRUE(p.contains("feature_map.w"));
  ASSERT_TRUE(p.contains("feature_map.b"));
  EXPECT_EQ(p["feature_map.w"].sizes().vec(), (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(p["feature_map.b"].sizes().vec(), (std::vector<int64_t>{2, 8}));
  LinearAttentionImpl hh(config_for("hedgehog"));
  EXPECT_TRUE(
      has_parameters(hh, {"feature_map.wq", "feature_map.bq", "feature_map.wk", "feature_map.bk"}));
  for (auto map : {"rfa", "performer"}) {
    LinearAttentionImpl m(config_for(map));
    EXPECT_TRUE(m.named_buffers().contains("feature_map.w")) << map;
  }
}

TEST(LinearAttention, UnknownFeatureMapIsAnError) {
  auto c = small_config("linear");
  c.feature_map = "cosine";
  EXPECT_THROW(LinearAttentionImpl m(c), Error);
}

TEST(LinearAttention, RegistryBuildsItFromAFeatureMapArch) {
  auto c = small_config("t2r");
  auto m = make_mixer(c);
  auto* la = dynamic_cast<LinearAttentionImpl*>(m.get());
  ASSERT_NE(la, nullptr);
  EXPECT_TRUE(la->named_parameters().contains("feature_map.w"));
}

namespace {
// Performer attention in double and in log space, from the map's log-features and no offsets:
// log a[t,j] = logsumexp_f(l(q_t)_f + l(k_j)_f), y_t = sum_{j<=t} softmax_j(log a[t,j]) v_j.
torch::Tensor performer_log_space_reference(LinearAttentionImpl& m, const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), H = m.config().n_head, Dh = m.config().d_head();
  auto heads = [&](const torch::Tensor& p) { return p.view({B, T, H, Dh}).transpose(1, 2); };
  auto lq = m.feature_map->log_features(heads(m.q(x)), true).to(torch::kDouble);   // [B,H,T,F]
  auto lk = m.feature_map->log_features(heads(m.k(x)), false).to(torch::kDouble);  // [B,H,T,F]
  auto v = heads(m.v(x)).to(torch::kDouble);                                       // [B,H,T,Dh]
  auto la = torch::logsumexp(lq.unsqueeze(3) + lk.unsqueeze(2), -1);               // [B,H,T,T]
  auto future = torch::ones({T, T}, torch::kBool).triu(1);
  auto w = torch::softmax(la.masked_fill(future, -INFINITY), -1);  // [B,H,T,T]
  auto y = torch::matmul(w, v).transpose(1, 2).reshape({B, T, H * Dh});
  return m.o(y.to(torch::kFloat));
}
}  // namespace

TEST(LinearAttention, PerformerLargeInputsAreExactWherePlainFeaturesUnderflow) {
  // |x~|^2 / 2 grows with the input scale s (about s^2 / 2 here), and exp() of it leaves the fp32
  // range: at s = 12 the plain products phi(q).phi(k) underflow to 0 and plain linear attention
  // divides 0 by eps. With the offsets all forms still agree, and equal the log-space reference.
  torch::NoGradGuard ng;
  torch::manual_seed(9);
  LinearAttentionImpl m(config_for("performer"));
  for (double scale : {4.0, 8.0, 12.0}) {
    auto x = torch::randn({2, 13, 16}) * scale;
    auto ref = performer_log_space_reference(m, x);
    const double tol = 1e-5 * ref.abs().max().item<double>();  // outputs grow with |v| ~ scale
    auto quad = m.forward_form(x, Form::quadratic);
    EXPECT_TRUE(all_close(quad, ref, 10 * tol, "quadratic vs log-space reference")) << scale;
    EXPECT_TRUE(all_close(m.forward_form(x, Form::chunked), quad, tol, "chunked vs quadratic"))
        << scale;
    EXPECT_TRUE(all_close(run_steps(m, x), quad, tol, "recurrent vs quadratic")) << scale;
    if (scale == 12.0) {
      auto heads = [](const torch::Tensor& p) { return p.view({2, 13, 2, 8}).transpose(1, 2); };
      auto pq = m.feature_map->forward(heads(m.q(x)), true);                    // [B,H,T,F]
      auto pk = m.feature_map->forward(heads(m.k(x)), false);                   // [B,H,T,F]
      auto plain_den = torch::matmul(pq, pk.transpose(-1, -2)).tril().sum(-1);  // [B,H,T]
      EXPECT_TRUE((plain_den == 0).any().item<bool>()) << "plain features did not underflow";
    }
  }
}

TEST(LinearAttention, PerformerExtremeInputsStayFinite) {
  // At s = 60 the per-head offsets still keep every exponent <= 0, so nothing overflows and no
  // NaN appears; the normalizer can then sit in fp32's denormal range, so the forms are only
  // required to be finite here (see the offset rule in linear_attention.h).
  torch::NoGradGuard ng;
  torch::manual_seed(11);
  LinearAttentionImpl m(config_for("performer"));
  auto x = torch::randn({2, 13, 16}) * 60.0;
  for (auto form : {Form::quadratic, Form::chunked, Form::recurrent})
    EXPECT_TRUE(torch::isfinite(m.forward_form(x, form)).all().item<bool>());
}
