#include "seqlab/infer/sampler.h"

#include "seqlab/core/error.h"
#include "seqlab/core/rng.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace seqlab::infer {

void SamplerConfig::validate() const {
  SEQLAB_CHECK(std::isfinite(temperature) && temperature >= 0,
               "--temperature must be >= 0 (0 = greedy), got {}", temperature);
  SEQLAB_CHECK(top_k >= 0, "--top-k must be >= 0 (0 = no limit), got {}", top_k);
  SEQLAB_CHECK(std::isfinite(top_p) && top_p > 0 && top_p <= 1,
               "--top-p must be in (0, 1] (1 = no limit), got {}", top_p);
}

Sampler::Sampler(const SamplerConfig& cfg, int64_t vocab_size) : cfg_(cfg), V_(vocab_size) {
  cfg_.validate();
  SEQLAB_CHECK(V_ > 0 && V_ <= INT32_MAX, "sampler: vocabulary size {} is out of range", V_);
  idx_.resize(V_);
  prob_.resize(V_);
}

int64_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

double Sampler::uniform(uint64_t seed, int64_t pos) {
  // One splitmix64 output of the (seed, position) pair; its top 53 bits as a double in [0, 1).
  return static_cast<double>(mix_seed(seed, static_cast<uint64_t>(pos)) >> 11) * 0x1.0p-53;
}

void Sampler::select_top(int64_t m, int64_t n) {
  const float* p = prob_.data();
  auto more_probable = [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  int32_t* first = idx_.data();
  if (m < n) std::nth_element(first, first + m, first + n, more_probable);
  std::sort(first, first + std::min(m, n), more_probable);
}

int64_t Sampler::sample(const float* logits, int64_t pos) {
  float max_logit = -INFINITY;
  for (int64_t i = 0; i < V_; ++i) {
    SEQLAB_CHECK(!std::isnan(logits[i]) && logits[i] != INFINITY,
                 "sampler: logit {} of token {} is not finite", logits[i], i);
    max_logit = std::max(max_logit, logits[i]);
  }
  SEQLAB_CHECK(max_logit > -INFINITY, "sampler: every logit is -inf");
  if (cfg_.greedy()) return argmax(logits, V_);

  // Unnormalised probabilities exp((l - max) / T): the best token has 1, none overflows.
  const float inv_t = static_cast<float>(1.0 / cfg_.temperature);
  float* p = prob_.data();
  for (int64_t i = 0; i < V_; ++i) p[i] = std::exp((logits[i] - max_logit) * inv_t);
  const double target_u = uniform(cfg_.seed, pos);

  if (cfg_.top_k == 0 && cfg_.top_p >= 1.0) {
    // Plain temperature sampling: walk the ids in order, no sort.
    double total = 0;
    for (int64_t i = 0; i < V_; ++i) total += p[i];
    const double target = target_u * total;
    double cum = 0;
    int64_t last = 0;
    for (int64_t i = 0; i < V_; ++i) {
      if (p[i] <= 0) continue;
      cum += p[i];
      last = i;
      if (target < cum) return i;
    }
    return last;  // rounding left target at the very end
  }

  std::iota(idx_.begin(), idx_.end(), 0);
  int64_t n = V_;
  if (cfg_.top_k > 0 && cfg_.top_k < V_) {
    // The k most probable to the front, in no particular order yet.
    const float* pp = p;
    std::nth_element(
        idx_.begin(), idx_.begin() + cfg_.top_k, idx_.end(),
        [pp](int32_t a, int32_t b) { return pp[a] > pp[b] || (pp[a] == pp[b] && a < b); });
    n = cfg_.top_k;
  }
  int64_t kept = n;
  if (cfg_.top_p >= 1.0) {
    select_top(n, n);
  } else {
    double total = 0;
    for (int64_t j = 0; j < n; ++j) total += p[idx_[j]];
    const double need = cfg_.top_p * total;
    // Sort a growing prefix until it holds the nucleus: usually a few dozen tokens, not all V.
    for (int64_t m = std::min<int64_t>(64, n);; m = std::min(2 * m, n)) {
      select_top(m, n);
      double cum = 0;
      int64_t j = 0;
      while (j < m && cum < need) cum += p[idx_[j++]];
      if (cum >= need || m == n) {
        kept = j;
        break;
      }
    }
  }
  double total = 0;
  for (int64_t j = 0; j < kept; ++j) total += p[idx_[j]];
  const double target = target_u * total;
  double cum = 0;
  int64_t last = idx_[0];
  for (int64_t j = 0; j < kept; ++j) {
    const int32_t id = idx_[j];
    if (p[id] <= 0) break;  // sorted: the rest are zero too
    cum += p[id];
    last = id;
    if (target < cum) return id;
  }
  return last;
}

}  // namespace seqlab::infer
