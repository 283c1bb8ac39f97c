#include "seqlab/tasks/copy_reverse_sort.h"

#include "seqlab/core/error.h"

#include <algorithm>

namespace seqlab {

CopyReverseSortTask::CopyReverseSortTask(const TaskConfig& cfg)
    : k_(cfg.vocab == 0 ? 8 : cfg.vocab) {
  SEQLAB_CHECK(k_ >= 2, "copy_reverse_sort: --vocab must be >= 2, got {}", k_);
}

Seq2SeqExample CopyReverseSortTask::draw(std::mt19937_64& rng, int64_t n) const {
  const int64_t task = draw_below(rng, kTasks), m = n - 1;
  Seq2SeqExample e;
  e.input.push_back(k_ + task);
  std::vector<int64_t> x(m);
  for (auto& s : x) s = draw_below(rng, k_);
  e.input.insert(e.input.end(), x.begin(), x.end());
  e.output = x;
  if (task == kReverse) std::reverse(e.output.begin(), e.output.end());
  if (task == kSort) std::sort(e.output.begin(), e.output.end());
  return e;
}

torch::Tensor CopyReverseSortTask::task_of(const torch::Tensor& input) const {
  return input.select(1, 0) - k_;  // [B]
}

}  // namespace seqlab
