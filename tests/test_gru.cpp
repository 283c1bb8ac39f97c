#include "seqlab/mixers/gru.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

TEST(GRU, StepMatchesForward) {
  torch::manual_seed(1);
  GRUImpl m(small_config("gru"));
  EXPECT_TRUE(step_matches_forward(m, 3, 13));
}

TEST(GRU, MatchesTorchGRUWithCopiedWeights) {
  // The reference: LibTorch's own GRU, with our weights copied in by gate order r|z|n. A gate
  // order or a reset-gate placement that differed from PyTorch's would show here.
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  GRUImpl m(small_config("gru"));
  torch::nn::GRU ref(torch::nn::GRUOptions(16, 16).batch_first(true));
  auto p = ref->named_parameters();
  p["weight_ih_l0"].copy_(m.w_ih->weight);
  p["weight_hh_l0"].copy_(m.w_hh->weight);
  p["bias_ih_l0"].copy_(m.w_ih->bias);
  p["bias_hh_l0"].copy_(m.w_hh->bias);
  auto x = torch::randn({3, 13, 16});
  auto h_ref = std::get<0>(ref->forward(x));  // [B,T,D]
  EXPECT_TRUE(all_close(m.forward(x), m.o(h_ref), 1e-5, "gru vs torch::nn::GRU"));
}

TEST(GRU, IsCausal) {
  torch::NoGradGuard ng;
  torch::manual_seed(2);
  GRUImpl m(small_config("gru"));
  auto x = torch::randn({2, 8, 16});
  auto y1 = m.forward(x);
  auto x2 = x.clone();
  x2.select(1, 5).add_(1.0);
  auto y2 = m.forward(x2);
  EXPECT_TRUE(all_close(y1.narrow(1, 0, 5), y2.narrow(1, 0, 5), 0.0));
  EXPECT_FALSE(all_close(y1.narrow(1, 5, 1), y2.narrow(1, 5, 1), 1e-6));
}

TEST(GRU, ParameterNamesAreTheContract) {
  GRUImpl m(small_config("gru"));
  auto p = m.named_parameters();
  EXPECT_EQ(p.size(), 6u);
  for (auto n : {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"})
    EXPECT_TRUE(p.contains(n)) << n;
  EXPECT_EQ(m.w_ih->weight.sizes(), (std::vector<int64_t>{48, 16}));
  EXPECT_EQ(m.w_hh->weight.sizes(), (std::vector<int64_t>{48, 16}));
}

TEST(GRU, CloneIsDeep) {
  torch::NoGradGuard ng;
  GRUImpl m(small_config("gru"));
  auto s = m.init_state(2);
  auto c = s->clone();
  m.step(torch::randn({2, 16}), *s);
  auto& cs = dynamic_cast<GRUState&>(*c);
  EXPECT_GT(dynamic_cast<GRUState&>(*s).h.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(cs.h.abs().sum().item<double>(), 0.0);
}

TEST(GRU, RejectsTheStateOfAnotherMixer) {
  torch::NoGradGuard ng;
  GRUImpl m(small_config("gru"));
  struct Other : MixerStateBase<Other> {
    void for_each(const std::function<void(const std::string&, torch::Tensor&)>&) override {}
  } other;
  EXPECT_THROW(m.step(torch::randn({2, 16}), other), seqlab::Error);
}
