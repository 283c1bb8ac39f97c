// Shared checks for whole models (SeqModel), beside mixer_testing.h's checks for one mixer.
#pragma once

#include "seqlab/model/model.h"

#include "mixer_testing.h"

namespace seqlab::testing {

// The whole model's recurrent form equals its parallel form: what makes it an RNN. Tokens are
// drawn from a generator seeded here.
inline ::testing::AssertionResult model_step_matches_forward(SeqModelImpl& m, int64_t B,
                                                             int64_t T) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  auto tokens = torch::randint(0, m.config().vocab_size, {B, T}, torch::kLong);
  auto par = m.forward(tokens);  // [B,T,V]
  auto s = m.init_state(B);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < T; ++t) ys.push_back(m.step(tokens.select(1, t), s));
  return all_close(par, torch::stack(ys, 1), 2e-5, "model step vs forward");
}

}  // namespace seqlab::testing
