// Shared checks for the mixer contract: the recurrent form equals the parallel form.
//
// On failure the message shows the first values of both forms and the max difference, so the
// failure explains itself (after llm.c's test_gpt2.c).
#pragma once

#include "seqlab/mixers/mixer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

namespace seqlab::testing {

inline std::string head_values(const torch::Tensor& t, int64_t n = 6) {
  auto f = t.flatten().to(torch::kDouble);
  std::ostringstream os;
  for (int64_t i = 0; i < std::min<int64_t>(n, f.numel()); ++i) os << f[i].item<double>() << " ";
  return os.str();
}

// Max |a - b| with a readable failure message when it exceeds tol.
inline ::testing::AssertionResult all_close(const torch::Tensor& a, const torch::Tensor& b,
                                            double tol, const std::string& what = "") {
  if (a.sizes() != b.sizes())
    return ::testing::AssertionFailure()
           << what << ": shapes differ " << a.sizes() << " vs " << b.sizes();
  const double diff = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
  if (!(diff <= tol))
    return ::testing::AssertionFailure()
           << what << ": max abs diff " << diff << " > " << tol
           << "\n  first of a: " << head_values(a) << "\n  first of b: " << head_values(b);
  return ::testing::AssertionSuccess();
}

// Runs step() over x [B,T,D] token by token and stacks the outputs: [B,T,D].
inline torch::Tensor run_steps(MixerImpl& m, const torch::Tensor& x) {
  auto s = m.init_state(x.size(0));
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < x.size(1); ++t) ys.push_back(m.step(x.select(1, t), *s));
  return torch::stack(ys, 1);
}

// The central contract test: step() over T tokens equals forward(), fp32, within tol.
inline ::testing::AssertionResult step_matches_forward(MixerImpl& m, int64_t B, int64_t T,
                                                       double tol = 1e-5, uint64_t seed = 0) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  auto x = torch::randn({B, T, m.config().d_model});
  auto par = m.forward(x);
  auto rec = run_steps(m, x);
  return all_close(par, rec, tol, "step vs forward");
}

// A small config for tests: D = 16, H = 2, T long enough to cross chunk boundaries.
inline MixerConfig small_config(const std::string& arch) {
  MixerConfig c;
  c.arch = arch;
  c.d_model = 16;
  c.n_head = 2;
  c.d_state = 4;
  c.chunk_size = 5;
  c.max_len = 64;
  c.validate();
  return c;
}

}  // namespace seqlab::testing
