#include "seqlab/tasks/duplicate_string.h"

namespace seqlab {

Seq2SeqExample DuplicateStringTask::draw(std::mt19937_64& rng, int64_t n) const {
  Seq2SeqExample e;
  e.input.resize(n);
  for (int64_t j = 0; j < n; ++j) e.input[j] = draw_below(rng, 2);
  e.output = e.input;
  e.output.insert(e.output.end(), e.input.begin(), e.input.end());
  return e;
}

}  // namespace seqlab
