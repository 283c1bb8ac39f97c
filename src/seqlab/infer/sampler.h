// The next-token sampler: greedy, temperature, top-k and top-p (nucleus, Holtzman et al. 2020)
// over one logits vector [V], shared by the fast decoder and the LibTorch engine.
//
// Deterministic and resumable: the draw for the token at position p (its index in the whole
// sequence, prompt included) is a function of (seed, p) and the logits alone, with no generator
// carried from token to token. So a generation resumed from a saved state at position p draws
// exactly what the uninterrupted one drew, and two engines that agree on the logits agree on the
// tokens.
//
// The rule, in this order:
//   temperature 0 (or top_k 1)  argmax; ties go to the smaller id
//   otherwise                    p_i ∝ exp(l_i / T); keep the top_k most probable (0 = all), then
//                                the smallest most-probable prefix whose mass reaches top_p
//                                (1 = all), renormalise, draw once from mix_seed(seed, p).
// "Most probable" orders by (probability descending, id ascending), a strict total order, so the
// kept set never depends on how ties fall.
//
// Cost: no heap allocation per token (index and probability buffers are sized to V once). Plain
// temperature sampling is O(V); top-k adds a partial selection, O(V + k log k); top-p selects a
// growing prefix (64, 128, ... candidates) until it holds the nucleus, O(V + n log n) for a
// nucleus of n tokens rather than a full sort of V. Not thread-safe (one Sampler per thread).
#pragma once

#include <cstdint>
#include <vector>

namespace seqlab::infer {

struct SamplerConfig {
  double temperature = 1.0;  // >= 0; 0 = greedy
  int64_t top_k = 0;         // >= 0; 0 = no limit
  double top_p = 1.0;        // in (0, 1]; 1 = no limit
  uint64_t seed = 0;
  // Throws seqlab::Error naming the flag (--temperature, --top-k, --top-p) of a bad value.
  void validate() const;
  bool greedy() const { return temperature == 0.0 || top_k == 1; }
};

class Sampler {
 public:
  Sampler(const SamplerConfig& cfg, int64_t vocab_size);

  // The token at sequence position pos, from logits [V] (not modified). Non-finite logits are an
  // error; a -inf logit is a token that is never drawn.
  int64_t sample(const float* logits, int64_t pos);

  const SamplerConfig& config() const { return cfg_; }

  // The uniform draw in [0, 1) that sample() uses at position pos (exposed for the tests).
  static double uniform(uint64_t seed, int64_t pos);

 private:
  // Sorts the m most probable candidates among idx_[0, n) to the front, in order.
  void select_top(int64_t m, int64_t n);
  SamplerConfig cfg_;
  int64_t V_;
  std::vector<int32_t> idx_;  // candidate ids [V]
  std::vector<float> prob_;   // unnormalised probabilities by id [V]
};

// argmax of logits [n]; ties go to the smaller index.
int64_t argmax(const float* logits, int64_t n);

}  // namespace seqlab::infer
