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
  copy_rnn_weights(*ref, m.w_ih, m.w_hh);
  auto x = torch::randn({3, 13, 16});
  auto h_ref = std::get<0>(ref->forward(x));  // [B,T,D]
  EXPECT_TRUE(all_close(m.forward(x), m.o(h_ref), 1e-5, "gru vs torch::nn::GRU"));
}

TEST(GRU, IsCausal) {
  torch::manual_seed(2);
  GRUImpl m(small_config("gru"));
  EXPECT_TRUE(is_causal(m, 2, 8, 5));
}

TEST(GRU, ParameterNamesAreTheContract) {
  GRUImpl m(small_config("gru"));
  EXPECT_TRUE(parameters_are(
      m, {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"}));
  EXPECT_EQ(m.w_ih->weight.sizes(), (std::vector<int64_t>{48, 16}));
  EXPECT_EQ(m.w_hh->weight.sizes(), (std::vector<int64_t>{48, 16}));
}

TEST(GRU, CloneIsDeep) {
  GRUImpl m(small_config("gru"));
  EXPECT_TRUE(clone_is_deep<GRUState>(m, 2));
}

TEST(GRU, RejectsTheStateOfAnotherMixer) {
  torch::NoGradGuard ng;
  GRUImpl m(small_config("gru"));
  struct Other : MixerStateBase<Other> {
    void for_each(const std::function<void(const std::string&, torch::Tensor&)>&) override {}
  } other;
  EXPECT_THROW(m.step(torch::randn({2, 16}), other), seqlab::Error);
}
