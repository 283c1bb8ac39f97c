#include "seqlab/mixers/elman.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

TEST(Elman, StepMatchesForward) {
  torch::manual_seed(1);
  ElmanImpl m(small_config("elman"));
  EXPECT_TRUE(step_matches_forward(m, 3, 13));
}

TEST(Elman, IsCausal) {
  // Changing a later token must not change earlier outputs.
  torch::NoGradGuard ng;
  torch::manual_seed(2);
  ElmanImpl m(small_config("elman"));
  auto x = torch::randn({2, 8, 16});
  auto y1 = m.forward(x);
  auto x2 = x.clone();
  x2.select(1, 5).add_(1.0);
  auto y2 = m.forward(x2);
  EXPECT_TRUE(all_close(y1.narrow(1, 0, 5), y2.narrow(1, 0, 5), 0.0));
  EXPECT_FALSE(all_close(y1.narrow(1, 5, 1), y2.narrow(1, 5, 1), 1e-6));
}

TEST(Elman, ParameterNamesAreTheContract) {
  ElmanImpl m(small_config("elman"));
  auto p = m.named_parameters();
  for (auto n : {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"})
    EXPECT_TRUE(p.contains(n)) << n;
}

TEST(Elman, CloneIsDeep) {
  torch::NoGradGuard ng;
  ElmanImpl m(small_config("elman"));
  auto s = m.init_state(2);
  auto c = s->clone();
  m.step(torch::randn({2, 16}), *s);
  auto& cs = dynamic_cast<ElmanState&>(*c);
  EXPECT_EQ(cs.h.abs().sum().item<double>(), 0.0);
}
