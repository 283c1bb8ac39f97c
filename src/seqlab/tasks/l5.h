// l5: a string over {a, b}; tag every prefix with whether its current count difference
// |#a - #b| is below 5.
//
// A counting language from the setting of Merrill et al. (ACL 2020, "A Formal Hierarchy of RNN
// Architectures"). Membership depends on the current difference only, but the difference can
// wander arbitrarily far and come back, so no finite automaton (and no counter clipped at a fixed
// bound) decides it: it needs one unbounded counter, which a saturated LSTM has and a saturated
// GRU or QRNN lacks.
//
// Symbols a = 0, b = 1; every position t is scored with class 1 iff |#a - #b| over x_0..x_t is
// below kBound = 5. The strings are random walks of the difference d that chase a target redrawn
// every few steps: half the targets lie near the boundary |d| = 5 (so labels flip often) and half
// anywhere in +-T/3 (so walks leave the band far behind and must be counted on the way back).
// Both labels are common at every length past the first few positions (|d| < 5 holds trivially
// for the first 5 symbols).
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class L5Task : public Task {
 public:
  static constexpr int64_t kBound = 5;

  explicit L5Task(const TaskConfig&) {}
  std::string name() const override { return "l5"; }
  int64_t vocab_size() const override { return 2; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return 2; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
};

}  // namespace seqlab
