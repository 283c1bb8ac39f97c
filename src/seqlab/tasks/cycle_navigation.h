// cycle_navigation: walk on a cycle of m states from state 0; where does the walk end?
//
// Regular tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky Hierarchy"): the
// input is a string of actions, the output the final state, a cyclic-group automaton that a
// recurrent model can track and that attention must count modulo m.
//
// Actions (their token ids follow Deletang's encoding, step = id - 1): 0 = step -1, 1 = stay,
// 2 = step +1, each uniform. m = --modulus (default 5, must be >= 2); m output classes.
// Layout (see seq2seq.h): actions SEP BLANK, T = n + 2, n >= 1; only the BLANK is scored.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class CycleNavigationTask : public Seq2SeqTask {
 public:
  explicit CycleNavigationTask(const TaskConfig& cfg);
  std::string name() const override { return "cycle_navigation"; }
  int64_t n_classes() const override { return modulus_; }

 protected:
  int64_t n_symbols() const override { return 3; }
  int64_t output_length(int64_t) const override { return 1; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;

 private:
  int64_t modulus_;
};

}  // namespace seqlab
