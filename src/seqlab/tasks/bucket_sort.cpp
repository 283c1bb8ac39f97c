#include "seqlab/tasks/bucket_sort.h"

#include "seqlab/core/error.h"

namespace seqlab {

BucketSortTask::BucketSortTask(const TaskConfig& cfg) : k_(cfg.vocab == 0 ? 5 : cfg.vocab) {
  SEQLAB_CHECK(k_ >= 2, "task bucket_sort: --vocab must be >= 2 (or 0 for 5), got {}", cfg.vocab);
}

Seq2SeqExample BucketSortTask::draw(std::mt19937_64& rng, int64_t n) const {
  // A counting sort: the task's own namesake, and linear in n.
  Seq2SeqExample e;
  e.input.resize(n);
  std::vector<int64_t> count(k_, 0);
  for (int64_t j = 0; j < n; ++j) ++count[e.input[j] = draw_below(rng, k_)];
  e.output.reserve(n);
  for (int64_t s = 0; s < k_; ++s) e.output.insert(e.output.end(), count[s], s);
  return e;
}

}  // namespace seqlab
