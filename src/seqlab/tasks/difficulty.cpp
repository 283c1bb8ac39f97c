#include "seqlab/tasks/difficulty.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"

#include <algorithm>
#include <cmath>

namespace seqlab {

std::vector<double> difficulty_posterior(const std::vector<int64_t>& counts) {
  SEQLAB_CHECK(!counts.empty(), "difficulty_posterior: no classes");
  const int64_t top = *std::max_element(counts.begin(), counts.end());
  std::vector<double> p(counts.size());
  double z = 0;
  for (size_t y = 0; y < counts.size(); ++y)
    z += p[y] = std::exp(DifficultyTask::kBeta * (counts[y] - top));
  for (double& v : p) v /= z;
  return p;
}

DifficultyTask::DifficultyTask(const TaskConfig& cfg) : classes_(cfg.vocab == 0 ? 3 : cfg.vocab) {
  SEQLAB_CHECK(classes_ >= 2 && classes_ <= 32,
               "difficulty: --vocab (the number of classes) must be in 2..32, got {}", classes_);
}

Batch DifficultyTask::sample_split(int64_t batch, int64_t length, uint64_t seed,
                                   Split split) const {
  SEQLAB_CHECK(batch > 0, "difficulty: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "difficulty: length {} is below the minimum {} (3C + 5)",
               length, min_length());
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(split), 0x64696666u};
  std::mt19937_64 rng(seq);
  const int64_t C = classes_;
  std::vector<int64_t> truth(batch);
  for (int64_t i = 0; i < batch; ++i) truth[i] = i % C;
  for (int64_t i = batch - 1; i > 0; --i) std::swap(truth[i], truth[draw_below(rng, i + 1)]);

  std::vector<int64_t> input(batch * length, pad()), n_valid(batch), target(batch);
  std::vector<float> soft(batch * C), difficulty(batch);
  std::vector<int64_t> counts(C), row;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t c = truth[i], k = 1 + draw_below(rng, kMaxMargin);
    int64_t top = 0;
    for (int64_t y = 0; y < C; ++y) {
      counts[y] = y == c ? 0 : draw_below(rng, kMaxBackground + 1);
      top = std::max(top, counts[y]);
    }
    counts[c] = top + k;
    row.clear();
    for (int64_t y = 0; y < C; ++y)
      for (int64_t j = 0; j < counts[y]; ++j) row.push_back(2 * y + draw_below(rng, 2));
    const auto n_ind = static_cast<int64_t>(row.size());
    const int64_t L = n_ind + draw_below(rng, length - n_ind + 1);
    while (static_cast<int64_t>(row.size()) < L) row.push_back(filler() + draw_below(rng, 4));
    for (int64_t j = L - 1; j > 0; --j) std::swap(row[j], row[draw_below(rng, j + 1)]);
    std::copy(row.begin(), row.end(), input.begin() + i * length);
    n_valid[i] = L;
    difficulty[i] = static_cast<float>(kMaxMargin - k);

    // A annotators, each a draw from p*; annotator 0 labels the train split.
    const auto p = difficulty_posterior(counts);
    std::vector<int64_t> votes(C);
    for (int64_t a = 0; a < kAnnotators; ++a) {
      double u = draw_unit(rng);
      int64_t y = 0;
      while (y < C - 1 && u >= p[y]) u -= p[y++];
      ++votes[y];
      if (a == 0) target[i] = y;
    }
    for (int64_t y = 0; y < C; ++y)
      soft[i * C + y] = static_cast<float>(static_cast<double>(votes[y]) / kAnnotators);
    if (split != Split::train) target[i] = c;
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);  // [B,T]
  b.target = torch::tensor(target, torch::kLong);  // [B]
  b.valid = torch::arange(length).unsqueeze(0).lt(
      torch::tensor(n_valid, torch::kLong).unsqueeze(1));           // [1,T] < [B,1] -> [B,T]
  b.mask = b.valid;                                                 // [B,T]
  b.soft = torch::tensor(soft, torch::kFloat).reshape({batch, C});  // [B,C]
  b.difficulty = torch::tensor(difficulty, torch::kFloat);          // [B]
  return b;
}

}  // namespace seqlab
