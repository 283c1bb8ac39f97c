// Mixture of attentive experts (mixers/mae.h): the mixer contract (step == forward, causal, deep
// clone, names, gradients), uniform gates == multi-head attention, and the one-pass form against
// the mixture of H explicit experts each dropping one head.
#include "seqlab/mixers/mae.h"

#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/softmax_attention.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

MixerConfig mae_config(const std::string& arch, const std::string& gate = "prefix",
                       int64_t heads = 4) {
  auto c = small_config(arch);
  c.n_head = heads;
  c.mae = true;
  c.mae_gate = gate;
  c.validate();
  return c;
}

// The wrapped attention without MAE, with the MAE's q, k, v, o (and feature map) copied in.
Mixer plain_twin(MaeImpl& m) {
  auto c = m.config();
  c.mae = false;
  auto plain = make_mixer(c);
  torch::NoGradGuard ng;
  auto src = m.named_parameters();
  for (auto& p : plain->named_parameters()) p.value().copy_(src[p.key()]);
  auto bsrc = m.named_buffers();
  for (auto& b : plain->named_buffers()) b.value().copy_(bsrc[b.key()]);
  return plain;
}

// The definition: H experts, expert i = H/(H-1) sum_{h != i} W_o^h y_h + b, mixed by the gate.
// Heads are read from the plain twin's forward with o replaced by the identity.
torch::Tensor explicit_mixture(MaeImpl& m, const torch::Tensor& x) {
  const int64_t H = m.config().n_head, Dh = m.config().d_head(), D = m.config().d_model;
  auto plain = plain_twin(m);
  auto& o = *std::dynamic_pointer_cast<torch::nn::LinearImpl>(plain->named_children()["o"]);
  torch::Tensor w = o.weight.clone(), b = o.bias.clone();
  {
    torch::NoGradGuard ng;
    o.weight.copy_(torch::eye(D));
    o.bias.zero_();
  }
  auto heads = plain->forward(x).to(torch::kDouble);  // [B,T,D] concat of the heads
  auto g = m.responsibilities(x).to(torch::kDouble);  // [B,T,H]
  auto wd = w.to(torch::kDouble), bd = b.to(torch::kDouble);
  auto y = torch::zeros_like(heads);
  for (int64_t i = 0; i < H; ++i) {
    auto dropped = heads.clone();
    dropped.narrow(2, i * Dh, Dh).zero_();  // expert i drops head i
    auto f_i = torch::matmul(dropped, wd.t()) * (double(H) / (H - 1)) + bd;  // [B,T,D]
    y = y + g.select(2, i).unsqueeze(-1) * f_i;
  }
  return y;
}

}  // namespace

TEST(Mae, StepMatchesForward) {
  for (const char* arch : {"softmax", "linear", "performer"})
    for (const char* gate : {"prefix", "token"}) {
      torch::manual_seed(1);
      MaeImpl m(mae_config(arch, gate));
      EXPECT_TRUE(step_matches_forward(m, 3, 13)) << arch << " gate " << gate;
    }
}

TEST(Mae, UniformGatesEqualMultiHeadAttention) {
  torch::NoGradGuard ng;
  for (const char* arch : {"softmax", "linear"}) {
    torch::manual_seed(2);
    MaeImpl m(mae_config(arch));
    auto plain = plain_twin(m);
    auto x = torch::randn({2, 11, 16});
    // A trained gate is not uniform: MAE differs from the heads it wraps...
    EXPECT_FALSE(all_close(m.forward(x), plain->forward(x), 1e-4)) << arch;
    // ...and with every responsibility 1/H it is exactly multi-head attention.
    m.gate->fc2->weight.zero_();
    m.gate->fc2->bias.zero_();
    EXPECT_TRUE(all_close(m.responsibilities(x), torch::full({2, 11, 4}, 0.25), 1e-7));
    EXPECT_TRUE(all_close(m.forward(x), plain->forward(x), 1e-5, std::string(arch) + " uniform"));
  }
}

TEST(Mae, OnePassEqualsMixtureOfExplicitExperts) {
  torch::NoGradGuard ng;
  for (const char* arch : {"softmax", "linear"})
    for (int64_t heads : {2, 4}) {
      torch::manual_seed(3);
      MaeImpl m(mae_config(arch, "prefix", heads));
      auto x = torch::randn({2, 9, 16});
      EXPECT_TRUE(all_close(m.forward(x), explicit_mixture(m, x), 1e-5,
                            std::string(arch) + " H=" + std::to_string(heads)));
    }
}

TEST(Mae, IsCausalAndPrefixGateUsesOnlyThePast) {
  torch::manual_seed(4);
  MaeImpl m(mae_config("softmax"));
  EXPECT_TRUE(is_causal(m, 2, 10, 6));
  torch::NoGradGuard ng;
  auto x = torch::randn({2, 10, 16});
  auto g = m.responsibilities(x);
  auto g2 = m.responsibilities(changed_at(x, 6));
  EXPECT_TRUE(all_close(g.narrow(1, 0, 6), g2.narrow(1, 0, 6), 0.0, "gate before the change"));
  EXPECT_FALSE(all_close(g.narrow(1, 6, 4), g2.narrow(1, 6, 4), 1e-6, "gate after the change"));
}

TEST(Mae, ParameterNamesKeepTheAttentionContract) {
  MaeImpl m(mae_config("softmax"));
  EXPECT_TRUE(parameters_are(
      m, {"q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias", "o.weight", "o.bias",
          "gate.fc1.weight", "gate.fc1.bias", "gate.fc2.weight", "gate.fc2.bias"}));
  MaeImpl l(mae_config("t2r"));
  EXPECT_TRUE(has_parameters(l, {"q.weight", "o.bias", "feature_map.w", "gate.fc2.weight"}));
  auto c = mae_config("softmax");
  c.mae_gate_hidden = 5;
  MaeImpl small(c);
  EXPECT_EQ(small.gate->fc1->weight.sizes(), torch::IntArrayRef({5, 16}));
  EXPECT_EQ(small.gate->fc2->weight.sizes(), torch::IntArrayRef({4, 5}));
}

TEST(Mae, CloneIsDeepAndGradientsReachEveryParameter) {
  torch::manual_seed(5);
  MaeImpl m(mae_config("softmax"));
  EXPECT_TRUE(clone_is_deep<MaeState>(m, 2));
  EXPECT_EQ(joined(state_names(*m.init_state(1))), "attn.k, attn.v, attn.len, sum, count");
  EXPECT_TRUE(gradient_reaches_every_parameter(m, 2, 7));
  MaeImpl l(mae_config("linear"));
  EXPECT_EQ(joined(state_names(*l.init_state(1))), "attn.S, attn.z, attn.m, attn.pos, sum, count");
  EXPECT_TRUE(gradient_reaches_every_parameter(l, 2, 7));
}

TEST(Mae, RegistryBuildsItFromTheFlag) {
  auto m = make_mixer(mae_config("softmax"));
  EXPECT_TRUE(std::dynamic_pointer_cast<MaeImpl>(m));
}

TEST(Mae, BadConfigsAreErrors) {
  auto one_head = small_config("softmax");
  one_head.n_head = 1;
  one_head.mae = true;
  EXPECT_THROW(one_head.validate(), Error);
  auto rnn = small_config("gru");
  rnn.mae = true;
  EXPECT_THROW(rnn.validate(), Error);
  auto gate = small_config("softmax");
  gate.mae = true;
  gate.mae_gate = "sentence";
  EXPECT_THROW(gate.validate(), Error);
  auto hidden = small_config("softmax");
  hidden.mae_gate_hidden = -1;
  EXPECT_THROW(hidden.validate(), Error);
}
