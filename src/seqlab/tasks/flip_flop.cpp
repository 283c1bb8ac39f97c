#include "seqlab/tasks/flip_flop.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

FlipFlopTask::FlipFlopTask(std::string name, double p_ignore)
    : name_(std::move(name)), p_ignore_(p_ignore) {
  SEQLAB_CHECK(p_ignore >= 0 && p_ignore < 1, "task {}: p(ignore) must be in [0, 1), got {}", name_,
               p_ignore);
}

Batch FlipFlopTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "task {}: batch must be positive, got {}", name_, batch);
  SEQLAB_CHECK(length >= min_length(), "task {}: length {} is below its minimum {} (w b r)", name_,
               length, min_length());
  const int64_t pairs = (length + 1) / 2;
  const double p_write = (1 - p_ignore_) / 2;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length), target(batch * length, 0), mask(batch * length, 0);
  std::vector<int64_t> stream(2 * pairs);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t memory = kZero;
    for (int64_t p = 0; p < pairs; ++p) {
      int64_t op = kRead;
      if (p == 0) {
        op = kWrite;
      } else if (p + 1 < pairs) {
        const double u = draw_unit(rng);
        op = u < p_ignore_ ? kIgnore : u < p_ignore_ + p_write ? kWrite : kRead;
      }
      const int64_t bit = kZero + draw_below(rng, 2);
      stream[2 * p] = op;
      stream[2 * p + 1] = op == kRead ? memory : bit;
      if (op == kWrite) memory = bit;
    }
    for (int64_t t = 0; t < length; ++t) {
      input[b * length + t] = stream[t];
      target[b * length + t] = t + 1 < 2 * pairs ? stream[t + 1] : 0;
      mask[b * length + t] = stream[t] == kRead;
    }
  }
  Batch out;
  out.input = rows_to_tensor(input, batch, length);                 // [B,T]
  out.target = rows_to_tensor(target, batch, length);               // [B,T]
  out.mask = rows_to_tensor(mask, batch, length).to(torch::kBool);  // [B,T]
  return out;
}

std::unique_ptr<Task> make_flip_flop(const TaskConfig&) {
  return std::make_unique<FlipFlopTask>("flip_flop", 0.8);
}
std::unique_ptr<Task> make_flip_flop_dense(const TaskConfig&) {
  return std::make_unique<FlipFlopTask>("flip_flop_dense", 0.1);
}
std::unique_ptr<Task> make_flip_flop_sparse(const TaskConfig&) {
  return std::make_unique<FlipFlopTask>("flip_flop_sparse", 0.98);
}

}  // namespace seqlab
