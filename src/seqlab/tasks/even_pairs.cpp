#include "seqlab/tasks/even_pairs.h"

namespace seqlab {

Seq2SeqExample EvenPairsTask::draw(std::mt19937_64& rng, int64_t n) const {
  Seq2SeqExample e;
  e.input.resize(n);
  int64_t pairs = 0;
  for (int64_t j = 0; j < n; ++j) {
    e.input[j] = draw_below(rng, 2);
    if (j > 0 && e.input[j] != e.input[j - 1]) ++pairs;
  }
  e.output = {pairs % 2 == 0 ? 1 : 0};
  return e;
}

}  // namespace seqlab
