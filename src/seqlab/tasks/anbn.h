// anbn and anbncn: next-symbol prediction on the positive strings of a^n b^n (resp. a^n b^n c^n).
//
// The counting languages of Gers & Schmidhuber (2001) and Suzgun et al. (2019) as used by
// Merrill et al. (ACL 2020, "A Formal Hierarchy of RNN Architectures"): a model accepts a^n b^n
// when, reading it left to right, it predicts every symbol that the prefix determines. During
// the a's the next symbol is a or b (not determined); from the first b on, every next symbol is
// determined, EOS included. a^n b^n needs one counter, a^n b^n c^n two.
//
// Layout (L = 2 letters for anbn, 3 for anbncn): BOS a^n b^n [c^n] EOS PAD..PAD with
// n = (T - 2) / L, the largest n that fits, so every string of a batch is the same one string:
// the language has exactly one member per n. Token ids: a = 0, b = 1, [c = 2,] then BOS, EOS,
// PAD. Head lm: the target at t is x_{t+1}.
//   - Trained on: every real position (BOS up to the last letter), with cross-entropy, so the
//     model learns the next-symbol distribution during the a's too (b.mask).
//   - Scored on: only the determined positions, those reading b or c (score() narrows the mask).
// score() reports the usual loss/accuracy over determined positions, and in extra:
//   "accepted": the fraction of strings in which every determined next symbol gets softmax
//               probability above cfg.threshold (default 0.5);
//   "string_n": the n of this length ("n" is taken: eval rows count scored positions in it).
// The largest n accepted is read off by evaluating at lengths 2n + 2 (anbn) or 3n + 2 (anbncn)
// for n = 1, 2, ...: `seqlab eval --model DIR --lengths 4,6,8,...,202 --json` and take the largest
// "string_n" whose row has "accepted" == 1 (usually the first failure ends generalisation).
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class AnbnTask : public Task {
 public:
  explicit AnbnTask(const TaskConfig& cfg, int64_t n_letters = 2);
  std::string name() const override { return n_letters_ == 2 ? "anbn" : "anbncn"; }
  int64_t vocab_size() const override { return n_letters_ + 3; }
  std::string head() const override { return "lm"; }
  int64_t n_classes() const override { return 0; }
  int64_t min_length() const override { return n_letters_ + 2; }  // n = 1
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
  Score score(const torch::Tensor& logits, const Batch& b) const override;
  bool has_blind_baseline() const override { return false; }  // T fixes the string

  int64_t bos() const { return n_letters_; }
  int64_t eos() const { return n_letters_ + 1; }
  int64_t pad() const { return n_letters_ + 2; }
  // The n of stream length T.
  int64_t n_of(int64_t length) const { return (length - 2) / n_letters_; }
  // [B,T] bool: the positions whose next symbol the prefix determines (reading b or c).
  torch::Tensor determined(const Batch& b) const;

 private:
  int64_t n_letters_;
  double threshold_;
};

class AnbncnTask : public AnbnTask {
 public:
  explicit AnbncnTask(const TaskConfig& cfg) : AnbnTask(cfg, 3) {}
};

}  // namespace seqlab
