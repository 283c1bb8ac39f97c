#include "seqlab/tasks/string_equality.h"

#include "seqlab/tasks/seq2seq.h"

#include <utility>

namespace seqlab {

StringEqualityTask::StringEqualityTask(const TaskConfig& cfg)
    : vocab_(cfg.vocab == 0 ? 4 : cfg.vocab) {
  SEQLAB_CHECK(vocab_ >= 2, "string_equality: --vocab must be at least 2, got {}", vocab_);
}

Batch StringEqualityTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "string_equality: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "string_equality: length {} is below the minimum {}", length,
               min_length());
  const int64_t L = (length - 1) / 2, lead = length - (2 * L + 1);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = i < (batch + 1) / 2 ? 1 : 0;
  for (int64_t i = batch - 1; i > 0; --i) std::swap(labels[i], labels[draw_below(rng, i + 1)]);

  std::vector<int64_t> input(batch * length, pad());
  for (int64_t i = 0; i < batch; ++i) {
    int64_t* x = &input[i * length + lead];
    int64_t* y = x + L + 1;
    for (int64_t j = 0; j < L; ++j) x[j] = y[j] = draw_below(rng, vocab_);
    x[L] = sep();
    if (labels[i] == 1) continue;
    auto change = [&](int64_t at) { y[at] = (x[at] + 1 + draw_below(rng, vocab_ - 1)) % vocab_; };
    const int64_t p = draw_below(rng, L);
    change(p);
    // Half the near misses differ in a second position too, at an offset in [1, L) from p.
    if (L >= 2 && draw_below(rng, 2)) change((p + 1 + draw_below(rng, L - 1)) % L);
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);  // [B,T]
  b.target = torch::tensor(labels, torch::kLong);  // [B]
  b.mask = b.input.ne(pad());                      // [B,T] the real tokens
  return b;
}

}  // namespace seqlab
