// The model options that pretrained layouts need (issue 32): rotary position embeddings, grouped-
// query attention, RMSNorm, SwiGLU, parallel residual, optional biases, untied heads. Each is
// checked against an independent formula, and every combination keeps the contract that the
// recurrent form equals the parallel one.
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/rope.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/model/model.h"

#include "model_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

MixerConfig rope_config(const std::string& arch, double fraction = 1.0, int64_t kv = 0) {
  MixerConfig c = small_config(arch);
  c.d_model = 32;
  c.n_head = 4;
  c.n_kv_head = kv;
  c.rope = true;
  c.rope_theta = 500.0;
  c.rope_fraction = fraction;
  c.validate();
  return c;
}

// RoPE by its definition, in double: dims (i, i + R/2) of each head rotate by p / theta^(2i/R).
torch::Tensor rope_reference(const MixerConfig& c, const torch::Tensor& x, int64_t p0) {
  auto y = x.to(torch::kDouble).clone();
  const int64_t R = c.rope_dims(), T = x.size(2);
  auto xd = x.to(torch::kDouble);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < R / 2; ++i) {
      const double a = static_cast<double>(p0 + t) / std::pow(c.rope_theta, 2.0 * i / R);
      auto x1 = xd.select(2, t).select(-1, i), x2 = xd.select(2, t).select(-1, i + R / 2);
      y.select(2, t).select(-1, i).copy_(x1 * std::cos(a) - x2 * std::sin(a));
      y.select(2, t).select(-1, i + R / 2).copy_(x2 * std::cos(a) + x1 * std::sin(a));
    }
  return y;
}

ModelConfig llama_like(const std::string& arch) {
  ModelConfig c;
  c.mixer = rope_config(arch, 1.0, 2);
  c.mixer.qkv_bias = false;
  c.mixer.o_bias = false;
  c.n_layer = 2;
  c.vocab_size = 13;
  c.norm = "rms";
  c.norm_eps = 1e-6;
  c.mlp = "swiglu";
  c.d_mlp = 40;
  c.mlp_bias = false;
  c.tie_embeddings = false;
  c.validate();
  return c;
}

ModelConfig neox_like(const std::string& arch) {
  ModelConfig c;
  c.mixer = rope_config(arch, 0.25);
  c.n_layer = 2;
  c.vocab_size = 13;
  c.parallel_residual = true;
  c.d_mlp = 48;
  c.tie_embeddings = false;
  c.validate();
  return c;
}

}  // namespace

TEST(Rope, MatchesTheDefinitionFullAndPartial) {
  torch::manual_seed(1);
  for (double fraction : {1.0, 0.25, 0.3}) {
    auto c = rope_config("softmax", fraction);
    auto x = torch::randn({2, 4, 5, 8});
    auto got = apply_rope(c, x, 7);
    EXPECT_TRUE(all_close(got, rope_reference(c, x, 7), 1e-5, "rope")) << fraction;
    const int64_t R = c.rope_dims();
    if (R < 8)  // the dims past R pass through untouched
      EXPECT_TRUE(torch::equal(got.narrow(-1, R, 8 - R), x.narrow(-1, R, 8 - R)));
  }
  EXPECT_EQ(rope_config("softmax", 0.3).rope_dims(), 2);  // int(8 * 0.3) = 2
}

TEST(Rope, ScoresDependOnlyOnRelativePosition) {
  torch::manual_seed(2);
  auto c = rope_config("softmax");
  auto q = torch::randn({1, 4, 1, 8}), k = torch::randn({1, 4, 1, 8});
  auto score = [&](int64_t pq, int64_t pk) {
    return (apply_rope(c, q, pq) * apply_rope(c, k, pk)).sum(-1);
  };
  EXPECT_TRUE(all_close(score(5, 2), score(103, 100), 1e-4, "q.k at offset 3"));
  EXPECT_FALSE(all_close(score(5, 2), score(5, 4), 1e-3, "different offsets"));
}

TEST(Rope, RepeatKvServesGroupsOfQueryHeads) {
  auto x = torch::arange(2 * 3, torch::kFloat).view({1, 2, 3, 1});  // [B,G=2,T=3,1]
  auto r = repeat_kv(x, 2);                                         // [1,4,3,1]
  ASSERT_EQ(r.sizes(), torch::IntArrayRef({1, 4, 3, 1}));
  EXPECT_TRUE(torch::equal(r.select(1, 0), x.select(1, 0)));
  EXPECT_TRUE(torch::equal(r.select(1, 1), x.select(1, 0)));
  EXPECT_TRUE(torch::equal(r.select(1, 2), x.select(1, 1)));
  EXPECT_TRUE(torch::equal(r.select(1, 3), x.select(1, 1)));
}

class AttentionOptions : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionOptions, RopeAndGqaStepMatchesForward) {
  torch::manual_seed(4);
  for (int64_t kv : {0, 2, 1}) {
    auto c = rope_config(GetParam(), 0.5, kv);
    c.qkv_bias = kv != 2;
    c.o_bias = kv == 0;
    auto m = make_mixer(c);
    EXPECT_TRUE(step_matches_forward(*m, 2, 40, 2e-5)) << "kv heads " << kv;
    EXPECT_TRUE(is_causal(*m, 1, 12, 6));
  }
}

// A GQA layer equals the full multi-head layer whose k and v rows are repeated per group.
TEST_P(AttentionOptions, GqaEqualsMhaWithRepeatedKeyValueHeads) {
  torch::manual_seed(6);
  auto gc = rope_config(GetParam(), 1.0, 2);
  auto mc = gc;
  mc.n_kv_head = 0;
  auto g = make_mixer(gc), m = make_mixer(mc);
  torch::NoGradGuard ng;
  auto gp = g->named_parameters(), mp = m->named_parameters();
  for (auto& p : mp) {
    auto src = gp[p.key()];
    if (p.key().rfind("k.", 0) == 0 || p.key().rfind("v.", 0) == 0) {
      // [G*Dh,...] -> [H*Dh,...]: kv head j serves query heads 2j and 2j+1
      auto rows = src.view({2, 1, 8, -1}).expand({2, 2, 8, src.dim() == 2 ? src.size(1) : 1});
      src = rows.reshape(p.value().sizes());
    }
    p.value().copy_(src);
  }
  auto x = torch::randn({2, 9, 32});
  EXPECT_TRUE(all_close(g->forward(x), m->forward(x), 2e-5, "gqa vs repeated mha"));
}

TEST_P(AttentionOptions, BiasesFollowTheFlags) {
  auto c = rope_config(GetParam(), 1.0, 2);
  c.qkv_bias = false;
  c.o_bias = false;
  auto m = make_mixer(c);
  for (const auto& p : m->named_parameters())
    EXPECT_EQ(p.key().find("bias"), std::string::npos) << p.key();
  EXPECT_EQ(m->named_parameters()["k.weight"].sizes(), torch::IntArrayRef({16, 32}));
}

INSTANTIATE_TEST_SUITE_P(Archs, AttentionOptions,
                         ::testing::Values("softmax", "elu1", "t2r", "hedgehog", "performer"));

TEST(LinearAttentionRope, AllFormsAgree) {
  torch::manual_seed(8);
  auto c = rope_config("hedgehog", 1.0, 2);
  c.chunk_size = 5;
  LinearAttentionImpl m(c);
  torch::NoGradGuard ng;
  auto x = torch::randn({2, 17, 32});
  using F = LinearAttentionImpl::Form;
  auto quad = m.forward_form(x, F::quadratic);
  EXPECT_TRUE(all_close(m.forward_form(x, F::chunked), quad, 2e-5, "chunked vs quadratic"));
  EXPECT_TRUE(all_close(m.forward_form(x, F::recurrent), quad, 2e-5, "recurrent vs quadratic"));
}

TEST(Norm, RmsNormMatchesItsFormula) {
  torch::manual_seed(9);
  NormImpl n(6, "rms", 1e-6);
  torch::NoGradGuard ng;
  n.weight.uniform_(0.5, 1.5);
  auto x = torch::randn({3, 6});
  auto ref = x / torch::sqrt(x.pow(2).mean(-1, true) + 1e-6) * n.weight;
  EXPECT_TRUE(all_close(n.forward(x), ref, 1e-6, "rms"));
  EXPECT_FALSE(n.bias.defined());
  NormImpl l(6, "layer", 1e-3);
  auto lref = torch::layer_norm(x, {6}, l.weight, l.bias, 1e-3);
  EXPECT_TRUE(all_close(l.forward(x), lref, 0, "layer"));
}

TEST(Mlp, SwiGluMatchesItsFormula) {
  torch::manual_seed(10);
  ModelConfig c = llama_like("softmax");
  MlpImpl mlp(c);
  torch::NoGradGuard ng;
  auto x = torch::randn({2, 32});
  auto g = torch::matmul(x, mlp.gate->weight.t()), u = torch::matmul(x, mlp.up->weight.t());
  auto ref = torch::matmul(g * torch::sigmoid(g) * u, mlp.down->weight.t());
  EXPECT_TRUE(all_close(mlp.forward(x), ref, 1e-5, "swiglu"));
  EXPECT_EQ(mlp.gate->weight.sizes(), torch::IntArrayRef({40, 32}));
  EXPECT_FALSE(mlp.down->bias.defined());
}

class FamilyModels : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyModels, LlamaAndNeoxLayoutsStepMatchesForward) {
  torch::manual_seed(11);
  SeqModelImpl llama(llama_like(GetParam()));
  EXPECT_TRUE(model_step_matches_forward(llama, 2, 20));
  SeqModelImpl neox(neox_like(GetParam()));
  EXPECT_TRUE(model_step_matches_forward(neox, 2, 20));
  EXPECT_FALSE(neox.wpe) << "RoPE models have no learned positions";
}

INSTANTIATE_TEST_SUITE_P(Archs, FamilyModels, ::testing::Values("softmax", "t2r", "hedgehog"));

TEST(FamilyLayout, ParameterNamesAreTheContract) {
  SeqModelImpl m(llama_like("softmax"));
  EXPECT_TRUE(has_parameters(
      m, {"wte.weight", "blocks.0.ln1.weight", "blocks.0.mixer.q.weight", "blocks.0.mixer.k.weight",
          "blocks.0.mlp.gate.weight", "blocks.0.mlp.up.weight", "blocks.0.mlp.down.weight",
          "ln_f.weight", "head.weight"}));
  for (const auto& p : m.named_parameters())
    EXPECT_EQ(p.key().find("bias"), std::string::npos) << p.key();
}

// Parallel residual is x + mixer(ln1 x) + mlp(ln2 x), both branches reading the block's input.
TEST(FamilyLayout, ParallelResidualSumsBothBranchesOfTheInput) {
  torch::manual_seed(12);
  BlockImpl b(neox_like("softmax"), 0);
  torch::NoGradGuard ng;
  auto x = torch::randn({1, 5, 32});
  auto ref = x + b.mixer->forward(b.ln1(x)) + b.mlp(b.ln2(x));
  EXPECT_TRUE(all_close(b.forward(x), ref, 1e-6, "parallel residual"));
}

TEST(FamilyLayout, BadOptionsAreClearErrors) {
  auto expect_error = [](MixerConfig c, const std::string& part) {
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected an error containing " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  MixerConfig c = small_config("softmax");
  c.n_kv_head = 3;
  expect_error(c, "must divide n_head");
  c = small_config("gru");
  c.rope = true;
  expect_error(c, "--rope needs");
  c = small_config("lstm");
  c.n_kv_head = 1;
  expect_error(c, "grouped-query");
  c = small_config("softmax");
  c.rope = true;
  c.rope_fraction = 0.05;
  expect_error(c, "at least 2");
  ModelConfig m;
  m.norm = "batch";
  EXPECT_THROW(m.validate(), Error);
  m = ModelConfig();
  m.mlp = "geglu";
  EXPECT_THROW(m.validate(), Error);
}
