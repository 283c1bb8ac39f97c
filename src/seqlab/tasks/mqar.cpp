#include "seqlab/tasks/mqar.h"

#include "seqlab/tasks/seq2seq.h"

#include <cmath>
#include <numeric>
#include <utility>

namespace seqlab {

MqarTask::MqarTask(const TaskConfig& cfg)
    : vocab_(cfg.vocab == 0 ? 256 : cfg.vocab), n_keys_(vocab_ / 2), n_pairs_(cfg.n_pairs) {
  SEQLAB_CHECK(vocab_ >= 4, "mqar: --vocab must be at least 4 (2 keys, 2 values), got {}", vocab_);
  SEQLAB_CHECK(n_pairs_ >= 0, "mqar: --n-pairs must be 0 (derived) or positive, got {}", n_pairs_);
  SEQLAB_CHECK(n_pairs_ <= n_keys_,
               "mqar: --n-pairs {} needs {} distinct keys, but --vocab {} holds only {} keys "
               "(half the vocabulary); raise --vocab to at least {}",
               n_pairs_, n_pairs_, vocab_, n_keys_, 2 * n_pairs_);
  SEQLAB_CHECK(pairs_of(cfg.max_len) <= n_keys_,
               "mqar: --max-len {} gives {} pairs (T / 3), but --vocab {} holds only {} distinct "
               "keys; raise --vocab to at least {} or fix --n-pairs",
               cfg.max_len, pairs_of(cfg.max_len), vocab_, n_keys_, 2 * pairs_of(cfg.max_len));
}

Batch MqarTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "mqar: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(),
               "mqar: length {} is below the minimum {} ({} pairs and a query)", length,
               min_length(), pairs_of(min_length()));
  const int64_t P = pairs_of(length), n_values = vocab_ - n_keys_;
  SEQLAB_CHECK(
      P <= n_keys_,
      "mqar: length {} gives {} pairs (T / 3), but --vocab {} holds only {} distinct keys; "
      "raise --vocab to at least {} or fix --n-pairs",
      length, P, vocab_, n_keys_, 2 * P);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length), target(batch * length, 0);
  std::vector<int64_t> keys(n_keys_), value_of(n_keys_);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t* x = &input[i * length];
    // P distinct keys: a partial Fisher-Yates shuffle of all K.
    std::iota(keys.begin(), keys.end(), 0);
    for (int64_t j = 0; j < P; ++j) std::swap(keys[j], keys[j + draw_below(rng, n_keys_ - j)]);
    for (int64_t j = 0; j < P; ++j) {
      value_of[keys[j]] = draw_below(rng, n_values);
      x[2 * j] = keys[j];
      x[2 * j + 1] = n_keys_ + value_of[keys[j]];
    }
    // Queries in shuffled rounds over the P keys.
    std::vector<int64_t> round(keys.begin(), keys.begin() + P);
    for (int64_t t = 2 * P, r = P; t < length; ++t, ++r) {
      if (r == P) {
        for (int64_t j = P - 1; j > 0; --j) std::swap(round[j], round[draw_below(rng, j + 1)]);
        r = 0;
      }
      x[t] = round[r];
      target[i * length + t] = value_of[round[r]];
    }
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);        // [B,T]
  b.target = rows_to_tensor(target, batch, length);      // [B,T]
  b.mask = torch::zeros({batch, length}, torch::kBool);  // [B,T]
  b.mask.slice(1, 2 * P).fill_(true);                    // the queries
  return b;
}

namespace {

// Product of two polynomials (coefficients from x^0), truncated after x^n.
std::vector<double> times(const std::vector<double>& a, const std::vector<double>& b, size_t n) {
  std::vector<double> c(n + 1, 0.0);
  for (size_t i = 0; i <= n; ++i)
    for (size_t j = 0; i + j <= n; ++j) c[i + j] += a[i] * b[j];
  return c;
}

}  // namespace

double mqar_value_guess(int64_t pairs, int64_t n_values) {
  SEQLAB_CHECK(pairs >= 1 && n_values >= 1,
               "mqar_value_guess: pairs and values must be positive, got {} and {}", pairs,
               n_values);
  const auto P = static_cast<size_t>(pairs);
  // P(largest multiplicity <= m) = P! / V^P [x^P] (sum_{k<=m} x^k / k!)^V (exponential generating
  // functions of the V values' counts), and E[largest] = sum_{m=0}^{P-1} P(largest > m).
  const double scale = std::exp(std::lgamma(static_cast<double>(P) + 1) -
                                static_cast<double>(P) * std::log(static_cast<double>(n_values)));
  double expected = 0;
  for (size_t m = 0; m < P; ++m) {
    std::vector<double> base(P + 1, 0.0), power(P + 1, 0.0);
    double f = 1;
    for (size_t k = 0; k <= m; ++k) {
      base[k] = f;
      f /= static_cast<double>(k + 1);
    }
    power[0] = 1;
    for (int64_t e = n_values; e > 0; e >>= 1) {  // power = base^V by squaring
      if (e & 1) power = times(power, base, P);
      if (e > 1) base = times(base, base, P);
    }
    expected += 1 - power[P] * scale;
  }
  return expected / static_cast<double>(P);
}

}  // namespace seqlab
