#include "seqlab/mixers/lstm.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

TEST(LSTM, StepMatchesForward) {
  torch::manual_seed(1);
  LSTMImpl m(small_config("lstm"));
  EXPECT_TRUE(step_matches_forward(m, 3, 13));
}

TEST(LSTM, MatchesTorchLSTMWithCopiedWeights) {
  // The reference: LibTorch's own LSTM, with our weights copied in by gate order i|f|g|o.
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  LSTMImpl m(small_config("lstm"));
  // Make the forget slice distinct from the rest, so that a swapped gate order cannot hide.
  m.w_hh->bias.narrow(0, 16, 16).uniform_(-0.5, 0.5);
  torch::nn::LSTM ref(torch::nn::LSTMOptions(16, 16).batch_first(true));
  copy_rnn_weights(*ref, m.w_ih, m.w_hh);
  auto x = torch::randn({3, 13, 16});
  auto h_ref = std::get<0>(ref->forward(x));  // [B,T,D]
  EXPECT_TRUE(all_close(m.forward(x), m.o(h_ref), 1e-5, "lstm vs torch::nn::LSTM"));
}

TEST(LSTM, ForgetBiasStartsAtOne) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  LSTMImpl m(small_config("lstm"));
  auto total = m.w_ih->bias + m.w_hh->bias;  // [4D]
  EXPECT_TRUE(all_close(total.narrow(0, 16, 16), torch::ones({16}), 0.0, "forget bias"));
  // The other gates keep their random init.
  EXPECT_GT((total.narrow(0, 0, 16) - 1).abs().min().item<double>(), 0.0);
  EXPECT_GT((total.narrow(0, 32, 32) - 1).abs().min().item<double>(), 0.0);
}

TEST(LSTM, IsCausal) {
  torch::manual_seed(2);
  LSTMImpl m(small_config("lstm"));
  EXPECT_TRUE(is_causal(m, 2, 8, 5));
}

TEST(LSTM, ParameterNamesAreTheContract) {
  LSTMImpl m(small_config("lstm"));
  EXPECT_TRUE(parameters_are(
      m, {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"}));
  EXPECT_EQ(m.w_ih->weight.sizes(), (std::vector<int64_t>{64, 16}));
}

TEST(LSTM, CloneIsDeep) {
  LSTMImpl m(small_config("lstm"));
  EXPECT_TRUE(clone_is_deep<LSTMState>(m, 2));  // over both h and c
  auto c = m.init_state(2)->clone();
  EXPECT_EQ(state_names(*c), (std::vector<std::string>{"h", "c"}));
}
