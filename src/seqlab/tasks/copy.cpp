#include "seqlab/tasks/copy.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

CopyTask::CopyTask(const TaskConfig& cfg) : k_(cfg.vocab == 0 ? 26 : cfg.vocab) {
  SEQLAB_CHECK(k_ >= 2, "task copy: --vocab must be >= 2 (or 0 for 26), got {}", cfg.vocab);
}

Batch CopyTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "task copy: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "task copy: length {} is below its minimum {} (x SEP)",
               length, min_length());
  const int64_t n = length / 2;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length, pad()), target(batch * length, 0),
      mask(batch * length, 0);
  std::vector<int64_t> stream(2 * n + 1);  // x SEP x: the input plus the final target
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < n; ++j) stream[j] = stream[n + 1 + j] = draw_below(rng, k_);
    stream[n] = sep();
    for (int64_t t = 0; t < 2 * n; ++t) {
      input[b * length + t] = stream[t];
      target[b * length + t] = stream[t + 1];
      mask[b * length + t] = t >= n;
    }
  }
  Batch out;
  out.input = rows_to_tensor(input, batch, length);                 // [B,T]
  out.target = rows_to_tensor(target, batch, length);               // [B,T]
  out.mask = rows_to_tensor(mask, batch, length).to(torch::kBool);  // [B,T]
  return out;
}

}  // namespace seqlab
