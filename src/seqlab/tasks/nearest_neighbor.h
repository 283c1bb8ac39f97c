// nearest_neighbor: k labelled points, then a query point; output the label of the point nearest
// to the query.
//
// Bhattamishra et al. (NeurIPS 2024, "Separations in the Representational Capabilities of
// Transformers and Recurrent Architectures"): attention can compare the query with every stored
// point at once, while a recurrent model must keep all k points in its state until the query
// arrives.
//
// Points are 2-d integer vectors on a Q x Q grid, Q = cfg.vocab (default 16), with one of
// kLabels = 4 labels. Token ids: coordinates 0..Q-1, labels Q..Q+3, QUERY = Q + 4, PAD = Q + 5.
// Layout:
//   u_1 v_1 LABEL_1  ..  u_k v_k LABEL_k  QUERY u v  PAD..PAD
// k = (T - 3) / 3, at least 2 (min_length 9); the 0..2 positions left over are trailing PADs,
// after the answer, so a causal model never sees them. Head tag with 4 classes: the label index of
// the nearest point (squared Euclidean distance) is the target at the query's last coordinate, the
// only position scored. The points of a string are distinct and the query's nearest point is unique
// by construction (a query with a tie is redrawn), so the answer is always well defined. Labels
// are uniform, so chance is 1/4.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class NearestNeighborTask : public Task {
 public:
  static constexpr int64_t kLabels = 4;

  explicit NearestNeighborTask(const TaskConfig& cfg);
  std::string name() const override { return "nearest_neighbor"; }
  int64_t vocab_size() const override { return grid_ + kLabels + 2; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return kLabels; }
  int64_t min_length() const override { return 9; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t label_token(int64_t c) const { return grid_ + c; }
  int64_t query() const { return grid_ + kLabels; }
  int64_t pad() const { return grid_ + kLabels + 1; }
  // Points in a stream of length T, and the position of the answer.
  static int64_t n_points(int64_t length) { return (length - 3) / 3; }
  static int64_t answer_position(int64_t length) { return 3 * n_points(length) + 2; }

 private:
  int64_t grid_;  // Q coordinate values per axis
};

}  // namespace seqlab
