// mqar: multi-query associative recall. Key-value pairs, then queries of those keys; at each
// query, predict the value its key was paired with.
//
// Arora et al. (2023, "Zoology: Measuring and Improving Recall in Efficient Language Models"):
// the recall task that explains most of the quality gap between attention and gated convolutions
// or recurrences; a fixed-size state can hold only so many pairs.
//
// Token ids: keys 0..K-1 and values K..V-1, disjoint, with V = cfg.vocab (default 256) and
// K = V / 2. Layout:
//   k_1 v_1 k_2 v_2 .. k_P v_P  q_1 q_2 .. q_{T-2P}
// The P keys of a string are distinct, values are uniform (they may repeat), and the queries run
// through the keys in shuffled rounds, so each key is asked about equally often. P = cfg.n_pairs,
// or T / 3 when that is 0 (then there are P queries, plus up to 2 repeats). Head tag with V - K
// classes: the target at a query is its value's index (token - K); only the queries are scored.
// With --tie-tag-head class v is read by token v's embedding row, i.e. by key v's: the readout
// under which 2-layer softmax attention learns this task (docs/results/recall-mqar-diagnostics).
// min_length: 3 with derived P, 2P + 1 with a fixed one. More pairs than keys is an error, whether
// P is fixed (in the constructor) or derived from a long T (in sample()).
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class MqarTask : public Task {
 public:
  explicit MqarTask(const TaskConfig& cfg);
  std::string name() const override { return "mqar"; }
  int64_t vocab_size() const override { return vocab_; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return vocab_ - n_keys_; }
  int64_t min_length() const override { return n_pairs_ > 0 ? 2 * n_pairs_ + 1 : 3; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t n_keys() const { return n_keys_; }
  // P for a stream of length T.
  int64_t pairs_of(int64_t length) const { return n_pairs_ > 0 ? n_pairs_ : length / 3; }

 private:
  int64_t vocab_;    // V
  int64_t n_keys_;   // K
  int64_t n_pairs_;  // P, 0 = derived from T
};

// The expected accuracy of a model that knows which values a string holds but not which key each
// belongs to, and answers every query with its most frequent value (ties: any of them): with P
// pairs whose values are uniform over `n_values` (V - K), it is E[largest multiplicity] / P. Exact
// up to rounding (a sum over the multiplicity bound, no sampling); the floor a recall claim must
// clear, since it falls with P without any recall (docs/results/recall-full/value_guess.py).
double mqar_value_guess(int64_t pairs, int64_t n_values);

}  // namespace seqlab
