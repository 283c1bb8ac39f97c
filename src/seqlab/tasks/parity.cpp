#include "seqlab/tasks/parity.h"

namespace seqlab {

Batch ParityTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  auto gen = make_generator(seed);
  Batch b;
  b.input = torch::randint(0, 2, {batch, length}, gen, torch::kLong);  // [B,T]
  b.target = b.input.cumsum(1).remainder(2);                           // [B,T]
  b.mask = torch::ones({batch, length}, torch::kBool);                 // [B,T]
  return b;
}

}  // namespace seqlab
