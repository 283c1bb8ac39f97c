#include "seqlab/tasks/modular_arithmetic.h"

#include "seqlab/core/error.h"

namespace seqlab {

ModularArithmeticTask::ModularArithmeticTask(const TaskConfig& cfg) : modulus_(cfg.modulus) {
  SEQLAB_CHECK(modulus_ >= 2 && modulus_ <= 65536,
               "task modular_arithmetic: --modulus must be in [2, 65536], got {}", modulus_);
}

int64_t ModularArithmeticTask::input_length(int64_t length) const {
  const int64_t n = Seq2SeqTask::input_length(length);
  return n % 2 == 1 ? n : n - 1;  // an expression alternates digit, operator, ..., digit
}

Seq2SeqExample ModularArithmeticTask::draw(std::mt19937_64& rng, int64_t n) const {
  // The value is a sum of signed products: a run of x extends the current product, and + or -
  // closes it into the sum and opens the next one with that sign.
  Seq2SeqExample e;
  e.input.resize(n);
  int64_t sum = 0, product = 0, sign = 1;
  for (int64_t j = 0; j < n; ++j) {
    if (j % 2 == 0) {
      const int64_t d = draw_below(rng, modulus_);
      e.input[j] = d;
      product = j == 0 || e.input[j - 1] != times() ? d : product * d % modulus_;
      continue;
    }
    e.input[j] = modulus_ + draw_below(rng, 3);
    if (e.input[j] == times()) continue;
    sum = (sum + sign * product + modulus_) % modulus_;
    sign = e.input[j] == plus() ? 1 : -1;
  }
  sum = (sum + sign * product + modulus_) % modulus_;
  e.output = {sum};
  return e;
}

}  // namespace seqlab
