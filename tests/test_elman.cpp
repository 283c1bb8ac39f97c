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
  torch::manual_seed(2);
  ElmanImpl m(small_config("elman"));
  EXPECT_TRUE(is_causal(m, 2, 8, 5));
}

TEST(Elman, ParameterNamesAreTheContract) {
  ElmanImpl m(small_config("elman"));
  EXPECT_TRUE(has_parameters(
      m, {"w_ih.weight", "w_ih.bias", "w_hh.weight", "w_hh.bias", "o.weight", "o.bias"}));
}

TEST(Elman, CloneIsDeep) {
  ElmanImpl m(small_config("elman"));
  EXPECT_TRUE(clone_is_deep<ElmanState>(m, 2));
}
