// reverse_string: read a binary string, then write it backwards.
//
// Deterministic context-free tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky
// Hierarchy"): a stack solves it, a finite automaton cannot for unbounded n.
//
// Layout (see seq2seq.h): x_1..x_n SEP BLANK^n, the j-th BLANK tagged with x_{n+1-j}; all n
// BLANKs scored. T = 2n + 1 (an even T gets one trailing PAD), n >= 1 so T >= 3. 2 classes.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class ReverseStringTask : public Seq2SeqTask {
 public:
  explicit ReverseStringTask(const TaskConfig&) {}
  std::string name() const override { return "reverse_string"; }
  int64_t n_classes() const override { return 2; }

 protected:
  int64_t n_symbols() const override { return 2; }
  int64_t output_length(int64_t n) const override { return n; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;
};

}  // namespace seqlab
