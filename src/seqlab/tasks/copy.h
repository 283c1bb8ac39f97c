// copy: read a random string, then repeat it after a separator.
//
// Jelassi et al. (ICML 2024, "Repeat After Me: Transformers are Better than State Space Models at
// Copying"). A Transformer can copy strings far longer than its state would allow a recurrent
// model to store: with a fixed-size state, copying n uniform symbols over k letters needs
// n log2 k bits, so recurrent models fail once n outgrows their state.
//
// As in the paper it is plain next-token prediction with teacher forcing: the stream is
//   x_1 .. x_n  SEP  x_1 .. x_{n-1}
// and the head is lm (target[t] is the token at t + 1); only the copy is scored, i.e. positions
// n .. 2n-1 (SEP and the copied prefix), whose targets are x_1 .. x_n.
// Tokens: letters 0..k-1 (k = --vocab, 0 = default 26, must be >= 2), SEP = k, PAD = k + 1.
// T = 2n (an odd T gets one trailing PAD, unscored); n >= 1 so T >= 2.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class CopyTask : public Task {
 public:
  explicit CopyTask(const TaskConfig& cfg);
  std::string name() const override { return "copy"; }
  int64_t vocab_size() const override { return k_ + 2; }
  std::string head() const override { return "lm"; }
  int64_t n_classes() const override { return 0; }
  int64_t min_length() const override { return 2; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t sep() const { return k_; }
  int64_t pad() const { return k_ + 1; }

 private:
  int64_t k_;
};

}  // namespace seqlab
