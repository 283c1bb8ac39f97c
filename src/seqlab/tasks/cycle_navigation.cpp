#include "seqlab/tasks/cycle_navigation.h"

#include "seqlab/core/error.h"

namespace seqlab {

CycleNavigationTask::CycleNavigationTask(const TaskConfig& cfg) : modulus_(cfg.modulus) {
  SEQLAB_CHECK(modulus_ >= 2, "task cycle_navigation: --modulus must be >= 2, got {}", modulus_);
}

Seq2SeqExample CycleNavigationTask::draw(std::mt19937_64& rng, int64_t n) const {
  Seq2SeqExample e;
  e.input.resize(n);
  int64_t state = 0;
  for (int64_t j = 0; j < n; ++j) {
    e.input[j] = draw_below(rng, 3);
    state = (state + e.input[j] - 1 + modulus_) % modulus_;
  }
  e.output = {state};
  return e;
}

}  // namespace seqlab
