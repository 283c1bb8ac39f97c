// stack_manipulation: run PUSH/POP actions on a given stack, then read the final stack out.
//
// Deterministic context-free tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky
// Hierarchy"). The input is an initial stack over {a, b}, given bottom to top, of length s uniform
// in [1, n-1], then n - s actions uniform over POP, PUSH a, PUSH b; a POP on an empty stack does
// nothing. The output is the final stack read top to bottom.
//
// Tokens (Deletang's encoding): a = 0, b = 1, POP = 2, PUSH a = 3, PUSH b = 4.
// Output classes: a = 0, b = 1, EMPTY = 2.
// Layout (see seq2seq.h): input SEP BLANK^{n+1}. The final stack has at most n symbols; the n + 1
// slots hold it top first and EMPTY after it. As in Deletang's accuracy mask, the slots are scored
// up to and including the first EMPTY (it says where the stack ends); the EMPTYs after it are
// targets but unscored, so the easy padding does not inflate the accuracy.
// T = 2n + 2 (an odd T gets one trailing PAD), n >= 2 (a stack and an action) so T >= 6.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class StackManipulationTask : public Seq2SeqTask {
 public:
  static constexpr int64_t kPop = 2, kPushA = 3, kPushB = 4;  // input tokens
  static constexpr int64_t kEmpty = 2;                        // output class

  explicit StackManipulationTask(const TaskConfig&) {}
  std::string name() const override { return "stack_manipulation"; }
  int64_t n_classes() const override { return 3; }

 protected:
  int64_t n_symbols() const override { return 5; }
  int64_t output_length(int64_t n) const override { return n + 1; }
  int64_t min_input_length() const override { return 2; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;
};

}  // namespace seqlab
