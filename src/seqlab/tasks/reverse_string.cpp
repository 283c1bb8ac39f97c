#include "seqlab/tasks/reverse_string.h"

namespace seqlab {

Seq2SeqExample ReverseStringTask::draw(std::mt19937_64& rng, int64_t n) const {
  Seq2SeqExample e;
  e.input.resize(n);
  e.output.resize(n);
  for (int64_t j = 0; j < n; ++j) e.input[j] = draw_below(rng, 2);
  for (int64_t j = 0; j < n; ++j) e.output[j] = e.input[n - 1 - j];
  return e;
}

}  // namespace seqlab
