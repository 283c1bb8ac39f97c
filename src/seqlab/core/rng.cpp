#include "seqlab/core/rng.h"

namespace seqlab {

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + stream + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

torch::Generator make_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

}  // namespace seqlab
