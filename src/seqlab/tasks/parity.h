// parity: a bit string; at every position, the parity of the bits so far.
//
// The classic task that separates recurrent models (a 2-state automaton) from attention without
// positions tricks (Hahn 2020; Deletang et al. 2023). Vocabulary {0,1}, two output classes,
// every position scored.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class ParityTask : public Task {
 public:
  explicit ParityTask(const TaskConfig&) {}
  std::string name() const override { return "parity"; }
  int64_t vocab_size() const override { return 2; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return 2; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
};

}  // namespace seqlab
