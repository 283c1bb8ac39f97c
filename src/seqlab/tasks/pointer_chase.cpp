#include "seqlab/tasks/pointer_chase.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"

#include <utility>

namespace seqlab {

PointerChaseTask::PointerChaseTask(const TaskConfig& cfg) : n_(cfg.max_len - 1), hops_(cfg.depth) {
  SEQLAB_CHECK(cfg.max_len >= 3, "pointer_chase: --max-len must be at least 3, got {}",
               cfg.max_len);
  SEQLAB_CHECK(hops_ >= 1 && hops_ <= 4, "pointer_chase: --depth (hops) must be in 1..4, got {}",
               hops_);
}

Batch PointerChaseTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "pointer_chase: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length == n_ + 1,
               "pointer_chase: length {} differs from the task's --max-len {} (its symbols and "
               "classes are the N = max_len - 1 positions)",
               length, n_ + 1);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> hop(batch);
  // A random start for the remainder; none drawn when B is a multiple of K (the suite's batches).
  const int64_t start = batch % hops_ == 0 ? 0 : draw_below(rng, hops_);
  for (int64_t i = 0; i < batch; ++i) hop[i] = 1 + (i + start) % hops_;
  for (int64_t i = batch - 1; i > 0; --i) std::swap(hop[i], hop[draw_below(rng, i + 1)]);

  std::vector<int64_t> input(batch * length), target(batch);
  std::vector<float> difficulty(batch);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t* x = &input[i * length];
    for (int64_t j = 0; j < n_; ++j) x[j] = draw_below(rng, n_);
    const int64_t p = draw_below(rng, n_);
    x[n_] = query(hop[i], p);
    int64_t at = p;
    for (int64_t k = 0; k < hop[i]; ++k) at = x[at];
    target[i] = at;
    difficulty[i] = static_cast<float>(hop[i] - 1);
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);           // [B,T]
  b.target = torch::tensor(target, torch::kLong);           // [B]
  b.valid = torch::ones({batch, length}, torch::kBool);     // [B,T]
  b.mask = b.valid;                                         // [B,T]
  b.difficulty = torch::tensor(difficulty, torch::kFloat);  // [B]
  return b;
}

}  // namespace seqlab
