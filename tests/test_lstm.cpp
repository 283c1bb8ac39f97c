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
  auto p = ref->named_parameters();
  p["weight_ih_l0"].copy_(m.w_ih->weight);
  p["weight_hh_l0"].copy_(m.w_hh->weight);
  p["bias_ih_l0"].copy_(m.w_ih->bias);
  p["bias_hh_l0"].copy_(m.w_hh->bias);
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
  torch::NoGradGuard ng;
  torch::manual_seed(2);
  LSTMImpl m(small_config("lstm"));
  auto x = torch::randn({2, 8, 16});
  auto y1 = m.forward(x);
  auto x2 = x.clone();
  x2.select(1, 5).add_(1.0);
  auto y2 = m.forward(x2);
  EXPECT_TRUE(all_close(y1.narrow(1, 0, 5), y2.narrow(1, 0, 5), 0.0));
  EXPECT_FALSE(all_close(y1.narrow(1, 5, 1), y2.narrow(1, 5, 1), 1e-6));
}

TEST(LSTM, ParameterNamesAreTheContract) {
  LSTMImpl m(small_config("lstm"));
  auto p = m.named_parameters();
  EXPECT_EQ(p.size(), 6u);
  for (auto n : {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"})
    EXPECT_TRUE(p.contains(n)) << n;
  EXPECT_EQ(m.w_ih->weight.sizes(), (std::vector<int64_t>{64, 16}));
}

TEST(LSTM, CloneIsDeep) {
  torch::NoGradGuard ng;
  LSTMImpl m(small_config("lstm"));
  auto s = m.init_state(2);
  auto c = s->clone();
  m.step(torch::randn({2, 16}), *s);
  auto& ss = dynamic_cast<LSTMState&>(*s);
  auto& cs = dynamic_cast<LSTMState&>(*c);
  EXPECT_GT(ss.h.abs().sum().item<double>(), 0.0);
  EXPECT_GT(ss.c.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(cs.h.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(cs.c.abs().sum().item<double>(), 0.0);
  std::vector<std::string> names;
  cs.for_each([&](const std::string& n, torch::Tensor&) { names.push_back(n); });
  EXPECT_EQ(names, (std::vector<std::string>{"h", "c"}));
}
