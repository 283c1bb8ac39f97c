// flip_flop: flip-flop language modelling, remembering one bit across distractors.
//
// Liu et al. (NeurIPS 2023, "Exposing Attention Glitches with Flip-Flop Language Modeling"). A
// string is a sequence of instruction-bit pairs: w b writes b, r b reads (b must equal the last
// written bit), i b is noise to ignore. FFL(p_i) draws each instruction i.i.d.: i with
// probability p_i, w and r with (1 - p_i)/2 each; the bit after w or i is uniform. The first
// instruction is always w (so every read is defined) and the last always r (so every string has a
// scored read). An LSTM extrapolates perfectly; Transformers make sporadic "glitches" on the long
// tail, most visibly when trained on FFL(0.8) and tested on sparse or dense variants.
//
// Variants (registry names): flip_flop = FFL(0.8), the paper's training distribution;
// flip_flop_dense = FFL(0.1) and flip_flop_sparse = FFL(0.98), its out-of-distribution tests.
//
// Tokens: w = 0, r = 1, i = 2, bit 0 = 3, bit 1 = 4. The head is lm: target[t] is the token at
// t + 1, but only the deterministic next tokens are scored, i.e. mask[t] is true exactly where
// token t is r (the prediction of the bit that follows it).
// T: the first T tokens of ceil(T/2) pairs. An even T ends with the final read bit; an odd T ends
// on the final r, its bit being the target at the last position. T >= 3 (w b r).
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class FlipFlopTask : public Task {
 public:
  static constexpr int64_t kWrite = 0, kRead = 1, kIgnore = 2, kZero = 3, kOne = 4;

  FlipFlopTask(std::string name, double p_ignore);
  std::string name() const override { return name_; }
  int64_t vocab_size() const override { return 5; }
  std::string head() const override { return "lm"; }
  int64_t n_classes() const override { return 0; }
  int64_t min_length() const override { return 3; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
  double p_ignore() const { return p_ignore_; }

 private:
  std::string name_;
  double p_ignore_;
};

// The registered variants; they read no TaskConfig field.
std::unique_ptr<Task> make_flip_flop(const TaskConfig&);
std::unique_ptr<Task> make_flip_flop_dense(const TaskConfig&);
std::unique_ptr<Task> make_flip_flop_sparse(const TaskConfig&);

}  // namespace seqlab
