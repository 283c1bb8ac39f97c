#include "seqlab/tasks/nearest_neighbor.h"

#include "seqlab/tasks/seq2seq.h"

#include <set>
#include <utility>

namespace seqlab {

NearestNeighborTask::NearestNeighborTask(const TaskConfig& cfg)
    : grid_(cfg.vocab == 0 ? 16 : cfg.vocab) {
  SEQLAB_CHECK(grid_ >= 2, "nearest_neighbor: --vocab (the grid size) must be at least 2, got {}",
               grid_);
  SEQLAB_CHECK(
      n_points(cfg.max_len) <= grid_ * grid_,
      "nearest_neighbor: --max-len {} holds {} points, more than the {} distinct points of "
      "a {}x{} grid; raise --vocab",
      cfg.max_len, n_points(cfg.max_len), grid_ * grid_, grid_, grid_);
}

namespace {

using Point = std::pair<int64_t, int64_t>;

// The index of the unique nearest point to q, or -1 on a tie.
int64_t unique_nearest(const std::vector<Point>& pts, const Point& q) {
  int64_t best = -1, best_d = 0;
  bool tie = false;
  for (size_t i = 0; i < pts.size(); ++i) {
    const int64_t du = pts[i].first - q.first, dv = pts[i].second - q.second;
    const int64_t d = du * du + dv * dv;
    if (best < 0 || d < best_d) {
      best = static_cast<int64_t>(i);
      best_d = d;
      tie = false;
    } else if (d == best_d) {
      tie = true;
    }
  }
  return tie ? -1 : best;
}

}  // namespace

Batch NearestNeighborTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "nearest_neighbor: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(),
               "nearest_neighbor: length {} is below the minimum {} (two points and a query)",
               length, min_length());
  const int64_t k = n_points(length), at = answer_position(length);
  SEQLAB_CHECK(k <= grid_ * grid_,
               "nearest_neighbor: length {} holds {} points, more than the {} distinct points of a "
               "{}x{} grid; raise --vocab",
               length, k, grid_ * grid_, grid_, grid_);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length, pad()), target(batch * length, 0);
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<Point> pts;
    std::set<Point> seen;
    while (static_cast<int64_t>(pts.size()) < k) {
      Point p{draw_below(rng, grid_), draw_below(rng, grid_)};
      if (seen.insert(p).second) pts.push_back(p);
    }
    Point q;
    int64_t nearest = -1;
    for (int attempt = 0; attempt < 64 && nearest < 0; ++attempt) {
      q = {draw_below(rng, grid_), draw_below(rng, grid_)};
      nearest = unique_nearest(pts, q);
    }
    if (nearest < 0) {  // crowded grid: a query on a point is its own unique nearest
      nearest = draw_below(rng, k);
      q = pts[nearest];
    }
    int64_t* x = &input[i * length];
    std::vector<int64_t> labels(k);
    for (int64_t j = 0; j < k; ++j) {
      labels[j] = draw_below(rng, kLabels);
      x[3 * j] = pts[j].first;
      x[3 * j + 1] = pts[j].second;
      x[3 * j + 2] = label_token(labels[j]);
    }
    x[3 * k] = query();
    x[3 * k + 1] = q.first;
    x[3 * k + 2] = q.second;
    target[i * length + at] = labels[nearest];
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);        // [B,T]
  b.target = rows_to_tensor(target, batch, length);      // [B,T]
  b.mask = torch::zeros({batch, length}, torch::kBool);  // [B,T]
  b.mask.select(1, at).fill_(true);                      // the answer only
  return b;
}

}  // namespace seqlab
