#include "seqlab/tasks/mqar.h"

#include "seqlab/tasks/seq2seq.h"

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

}  // namespace seqlab
