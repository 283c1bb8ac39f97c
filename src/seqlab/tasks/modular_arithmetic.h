// modular_arithmetic: the value, modulo m, of an expression d op d op ... op d without brackets.
//
// Regular tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky Hierarchy"), the
// "Modular Arithmetic (Simple)" task. As in their generator, operators follow the usual precedence:
// x binds tighter than + and -, which associate to the left; so 1 + 2 x 3 = 7, 1 - 1 - 1 = -1.
// (Strictly left-to-right evaluation would be just as regular; we keep the paper's semantics.)
//
// Tokens: digits 0..m-1, then + = m, - = m+1, x = m+2; digits and operators uniform.
// m = --modulus (default 5, 2 <= m <= 65536); m output classes.
// Layout (see seq2seq.h): the expression has odd length n (digits at even offsets), then SEP and
// one BLANK scored with the value. T = n + 2 for odd n; an even T - 2 uses n = T - 3 and one
// trailing PAD. n >= 1 (a single digit is its own value), so T >= 3.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class ModularArithmeticTask : public Seq2SeqTask {
 public:
  explicit ModularArithmeticTask(const TaskConfig& cfg);
  std::string name() const override { return "modular_arithmetic"; }
  int64_t n_classes() const override { return modulus_; }
  int64_t input_length(int64_t length) const override;

  int64_t plus() const { return modulus_; }
  int64_t minus() const { return modulus_ + 1; }
  int64_t times() const { return modulus_ + 2; }

 protected:
  int64_t n_symbols() const override { return modulus_ + 3; }
  int64_t output_length(int64_t) const override { return 1; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;

 private:
  int64_t modulus_;
};

}  // namespace seqlab
