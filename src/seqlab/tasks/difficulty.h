// difficulty: synthetic classification with a known difficulty and a known label distribution
// p*(y|x) per example, for calibration, early exit and uncertainty (SWAG) studies.
//
// C classes (C = --vocab, default 3, 2..32). Each class y owns two indicator tokens (2y, 2y+1);
// four filler tokens (2C..2C+3) carry nothing; PAD = 2C+4; vocab_size = 2C+5. Let n_y(x) count the
// indicator tokens of class y in x. The label distribution is
//
//   p*(y|x) = softmax_y(beta * n_y(x)),  beta = 1,
//
// and an annotator is one draw from p*(.|x), so annotators disagree exactly as much as p* says.
//
// One example: a true class c (exactly balanced per batch: B/C each, the remainder to the lowest
// classes, shuffled) and a margin k, uniform in 1..K (K = 5). Every other class y gets a background
// count b_y, uniform in 0..3, and c gets n_c = max_y b_y + k, so c is the unique argmax of p* and
// n_c - max_{y != c} n_y = k. The indicator tokens (each a uniform pick of its class's two) and
// filler tokens up to a length L, uniform in [#indicators, T], are shuffled into the first L
// positions; the rest is PAD (right padding). difficulty = K - k, 0 (easy: p*(c) >= 0.98 for C = 3)
// .. K - 1 = 4 (hard: p*(c) in 0.58..0.73 for C = 3).
//
// Batch (head classify):
//   input      [B,T] int64, tokens as above
//   valid/mask [B,T] bool, the first L positions
//   target     [B] int64: train split, annotator 0's label (a draw from p*); valid and test
//              splits, the majority label argmax p* = c
//   soft       [B,C] float: the empirical label distribution of A = 100 annotators (annotator 0
//              among them), every split; exact p* is difficulty_posterior(counts)
//   difficulty [B] float: K - k
//
// Splits: generated, so a split is a seed stream. The generator of (seed, split) is seeded with the
// sequence (seed low 32 bits, seed high 32 bits, split, salt), distinct for every pair, so valid
// and test batches never reuse the stream of any train seed. sample() = sample_split(train).
// min_length = 3C + 5, the most indicator tokens an example has.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class DifficultyTask : public Task {
 public:
  static constexpr int64_t kMaxMargin = 5;      // K
  static constexpr int64_t kMaxBackground = 3;  // b_y in 0..3
  static constexpr int64_t kAnnotators = 100;   // A
  static constexpr double kBeta = 1.0;

  explicit DifficultyTask(const TaskConfig& cfg);
  std::string name() const override { return "difficulty"; }
  int64_t vocab_size() const override { return 2 * classes_ + 5; }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return classes_; }
  int64_t min_length() const override { return kMaxBackground * classes_ + kMaxMargin; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override {
    return sample_split(batch, length, seed, Split::train);
  }
  Batch sample_split(int64_t batch, int64_t length, uint64_t seed, Split split) const override;

  int64_t filler() const { return 2 * classes_; }  // the first of the four fillers
  int64_t pad() const { return 2 * classes_ + 4; }

 private:
  int64_t classes_;  // C
};

// p*(y|x) = softmax(beta * counts) for the indicator counts n_y(x).
std::vector<double> difficulty_posterior(const std::vector<int64_t>& counts);

}  // namespace seqlab
