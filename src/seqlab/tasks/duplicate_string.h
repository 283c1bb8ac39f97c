// duplicate_string: read a binary string w, then write ww.
//
// Context-sensitive tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky
// Hierarchy"): the output repeats the input twice, which needs random access to the input (a
// tape), not only a stack.
//
// Layout (see seq2seq.h): w_1..w_n SEP BLANK^{2n}, the BLANKs tagged with w_1..w_n w_1..w_n; all
// 2n scored. T = 3n + 1 (other T get up to two trailing PADs), n >= 1 so T >= 4. 2 classes.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class DuplicateStringTask : public Seq2SeqTask {
 public:
  explicit DuplicateStringTask(const TaskConfig&) {}
  std::string name() const override { return "duplicate_string"; }
  int64_t n_classes() const override { return 2; }

 protected:
  int64_t n_symbols() const override { return 2; }
  int64_t output_length(int64_t n) const override { return 2 * n; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;
};

}  // namespace seqlab
