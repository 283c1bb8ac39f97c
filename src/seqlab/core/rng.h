// Deterministic random streams. Every random draw in seqlab that must be reproducible (training
// batches, evaluation sets, sampling, benchmark prompts) comes from a seed mixed with a stream
// index, never from a generator's running position, so a step, a length or a token can be
// regenerated on its own: exact resume, and the same prompt in every engine.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace seqlab {

// Mixes a base seed with a stream index (a step, a length): independent deterministic streams.
// splitmix64 of the pair, so adjacent indices give unrelated streams.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

// A CPU torch generator seeded with seed.
torch::Generator make_generator(uint64_t seed);

}  // namespace seqlab
