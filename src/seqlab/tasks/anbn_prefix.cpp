#include "seqlab/tasks/anbn_prefix.h"

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

namespace {

constexpr int64_t kA = 0, kB = 1;

// One string of length T (see the header for the mixture).
std::vector<int64_t> draw_string(std::mt19937_64& rng, int64_t T) {
  std::vector<int64_t> s(T);
  for (auto& x : s) x = draw_below(rng, 2);  // the junk, overwritten where the shape says
  const double u = draw_unit(rng);
  if (u < 2.0 / 3.0) {
    const int64_t n = 1 + draw_below(rng, T / 2);
    for (int64_t j = 0; j < 2 * n; ++j) s[j] = j < n ? kA : kB;
  } else if (u < 2.0 / 3.0 + 0.25 && T >= 3) {
    // Near miss: a^k b^m with 1 <= m < k, then an 'a' if the string goes on. k ranges like the
    // n of positives, and half of them stop exactly one b short, the hardest case.
    const int64_t k = 2 + draw_below(rng, (T + 1) / 2 - 1);  // [2, (T+1)/2], so k - 1 <= T - k
    const int64_t m = draw_below(rng, 2) ? k - 1 : 1 + draw_below(rng, k - 1);
    for (int64_t j = 0; j < k + m; ++j) s[j] = j < k ? kA : kB;
    if (k + m < T) s[k + m] = kA;
  }
  return s;
}

}  // namespace

Batch AnbnPrefixTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "anbn_prefix: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "anbn_prefix: length {} is below the minimum {} (a b)",
               length, min_length());
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input, target;
  input.reserve(batch * length);
  target.reserve(batch * length);
  for (int64_t i = 0; i < batch; ++i) {
    auto s = draw_string(rng, length);
    // The tag: the leading run of a's fixes n; the prefix is complete once n b's follow it.
    int64_t run_a = 0;
    while (run_a < length && s[run_a] == kA) ++run_a;
    int64_t run_b = 0;
    while (run_a + run_b < length && s[run_a + run_b] == kB && run_b < run_a) ++run_b;
    const int64_t done = run_a >= 1 && run_b == run_a ? 2 * run_a - 1 : length;
    for (int64_t t = 0; t < length; ++t) {
      input.push_back(s[t]);
      target.push_back(t >= done ? 1 : 0);
    }
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);       // [B,T]
  b.target = rows_to_tensor(target, batch, length);     // [B,T]
  b.mask = torch::ones({batch, length}, torch::kBool);  // [B,T]
  return b;
}

}  // namespace seqlab
