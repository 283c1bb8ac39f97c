#include "seqlab/tasks/index_lookup.h"

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

IndexLookupTask::IndexLookupTask(const TaskConfig& cfg)
    : vocab_(cfg.vocab == 0 ? 16 : cfg.vocab), max_positions_(cfg.max_len - 2) {
  SEQLAB_CHECK(vocab_ >= 2, "index_lookup: --vocab must be at least 2, got {}", vocab_);
  SEQLAB_CHECK(max_positions_ >= 1,
               "index_lookup: --max-len {} leaves no room for a symbol (need at least 3: "
               "symbols, SEP, index)",
               cfg.max_len);
}

Batch IndexLookupTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "index_lookup: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "index_lookup: length {} is below the minimum {}", length,
               min_length());
  const int64_t N = length - 2;
  SEQLAB_CHECK(N <= max_positions_,
               "index_lookup: length {} holds {} symbols, but the task has index tokens for {} "
               "positions only (built for --max-len {}); longer streams would query untrained "
               "index tokens",
               length, N, max_positions_, max_positions_ + 2);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length), target(batch * length, 0);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t* x = &input[i * length];
    for (int64_t p = 0; p < N; ++p) x[p] = draw_below(rng, vocab_);
    const int64_t q = draw_below(rng, N);
    x[N] = sep();
    x[N + 1] = index_token(q);
    target[i * length + N + 1] = x[q];
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);        // [B,T]
  b.target = rows_to_tensor(target, batch, length);      // [B,T]
  b.mask = torch::zeros({batch, length}, torch::kBool);  // [B,T]
  b.mask.select(1, length - 1).fill_(true);              // the answer only
  return b;
}

}  // namespace seqlab
