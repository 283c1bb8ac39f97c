#include "seqlab/tasks/l5.h"

#include "seqlab/tasks/seq2seq.h"

#include <algorithm>
#include <cstdlib>

namespace seqlab {

Batch L5Task::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0 && length > 0, "l5: batch and length must be positive, got {} x {}", batch,
               length);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length), target(batch * length);
  const int64_t far = std::max<int64_t>(length / 3, 2 * kBound);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t d = 0, goal = 0, left = 0;
    for (int64_t t = 0; t < length; ++t) {
      if (left == 0) {
        // Redraw the target: near the boundary (magnitude 2..8) or anywhere in +-far.
        const int64_t mag =
            draw_unit(rng) < 0.5 ? 2 + draw_below(rng, 7) : draw_below(rng, far + 1);
        goal = draw_below(rng, 2) ? mag : -mag;
        left = 4 + draw_below(rng, 13);
      }
      --left;
      // Step towards the target with probability 0.8; a fair coin once there.
      const double p_a = d < goal ? 0.8 : d > goal ? 0.2 : 0.5;
      const int64_t sym = draw_unit(rng) < p_a ? 0 : 1;
      d += sym == 0 ? 1 : -1;
      input[i * length + t] = sym;
      target[i * length + t] = std::abs(d) < kBound ? 1 : 0;
    }
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);       // [B,T]
  b.target = rows_to_tensor(target, batch, length);     // [B,T]
  b.mask = torch::ones({batch, length}, torch::kBool);  // [B,T]
  return b;
}

}  // namespace seqlab
