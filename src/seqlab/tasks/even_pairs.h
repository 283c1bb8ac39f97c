// even_pairs: is the number of "ab" and "ba" pairs in a binary string even?
//
// Regular tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky Hierarchy").
// Each change of symbol between neighbours is one "ab" or "ba" pair, so the count is even exactly
// when the first and the last symbol agree: a 2-state automaton that only has to remember x_1.
//
// Layout (see seq2seq.h): x_1..x_n SEP BLANK, T = n + 2, n >= 1, the single answer tagged at the
// final BLANK (class 1 = even, 0 = odd; mask true only there). Symbols a = 0, b = 1. Labels are
// balanced for n >= 2 (a string of one symbol has no pairs, so n = 1 is always "even").
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class EvenPairsTask : public Seq2SeqTask {
 public:
  explicit EvenPairsTask(const TaskConfig&) {}
  std::string name() const override { return "even_pairs"; }
  int64_t n_classes() const override { return 2; }

 protected:
  int64_t n_symbols() const override { return 2; }
  int64_t output_length(int64_t) const override { return 1; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;
};

}  // namespace seqlab
