// index_lookup: N symbols, a separator, then an index i; output the symbol at position i.
//
// Bhattamishra et al. (NeurIPS 2024, "Separations in the Representational Capabilities of
// Transformers and Recurrent Architectures"): a one-layer Transformer of size polylog(N) solves
// index lookup, while any recurrent model must keep a state of size linear in N, since the query
// comes only after all symbols have gone by.
//
// Layout: x_0 .. x_{N-1} SEP IDX_i, T = N + 2 (min_length 3). Token ids: symbols 0..V-1
// (V = cfg.vocab, default 16), SEP = V, then one index token per position, IDX_p = V + 1 + p for
// p in [0, P). The index tokens are their own symbols, so the model needs no positional trick to
// read the query, and the vocabulary is fixed when the task is built: P = cfg.max_len - 2, the
// longest training stream. A longer stream (N > P) would need index tokens the model never saw, so
// sample() rejects it. Head tag with V classes: the target x_i sits at the last position, the only
// one scored. Symbols and i are uniform.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class IndexLookupTask : public Task {
 public:
  explicit IndexLookupTask(const TaskConfig& cfg);
  std::string name() const override { return "index_lookup"; }
  int64_t vocab_size() const override { return vocab_ + 1 + max_positions_; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return vocab_; }
  int64_t min_length() const override { return 3; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t sep() const { return vocab_; }
  int64_t index_token(int64_t p) const { return vocab_ + 1 + p; }
  int64_t max_positions() const { return max_positions_; }

 private:
  int64_t vocab_;          // V symbols
  int64_t max_positions_;  // P index tokens
};

}  // namespace seqlab
