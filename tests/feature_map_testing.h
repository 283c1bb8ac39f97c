// Shared helpers for the feature-map tests (tests/test_<map>.cpp).
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

#include "mixer_testing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace seqlab::testing {

// A linear-attention config for feature map `map`, with head width Dh = d_model / n_head and
// feature width d_feature (0 = d_head).
inline MixerConfig map_config(const std::string& map, int64_t d_model = 16, int64_t n_head = 2,
                              int64_t d_feature = 0) {
  auto c = small_config("linear");
  c.feature_map = map;
  c.d_model = d_model;
  c.n_head = n_head;
  c.d_feature = d_feature;
  c.validate();
  return c;
}

// One row's features computed by hand in double, from that row's input x_row [Dh] and its head's
// random matrix w_h [Fw][Dh].
using PlainFeatures = std::function<std::vector<double>(
    const std::vector<double>& x_row, const std::vector<std::vector<double>>& w_h)>;

// fm.forward(x, true) for x [B,H,T,Dh] equals `plain` row by row: the shape is [B,H,T,out_dim]
// and the worst absolute error (or, with relative, the worst error / plain value) is below tol.
// fm holds its random matrix in the buffer w [H,Fw,Dh].
template <class Map>
::testing::AssertionResult matches_plain_features(Map& fm, const torch::Tensor& x, int64_t out_dim,
                                                  const PlainFeatures& plain, double tol,
                                                  bool relative = false) {
  auto got = fm.forward(x, true).to(torch::kDouble);  // [B,H,T,F]
  const std::vector<int64_t> want_shape = {x.size(0), x.size(1), x.size(2), out_dim};
  if (got.sizes().vec() != want_shape)
    return ::testing::AssertionFailure()
           << "features have shape " << got.sizes() << ", want " << torch::IntArrayRef(want_shape);
  auto xd = x.to(torch::kDouble), w = fm.w.to(torch::kDouble);
  auto xa = xd.template accessor<double, 4>(), ga = got.template accessor<double, 4>();
  auto wa = w.template accessor<double, 3>();
  const int64_t Dh = x.size(3);
  double worst = 0;
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t h = 0; h < x.size(1); ++h)
      for (int64_t t = 0; t < x.size(2); ++t) {
        std::vector<double> x_row(Dh);
        for (int64_t d = 0; d < Dh; ++d) x_row[d] = xa[b][h][t][d];
        std::vector<std::vector<double>> w_h(w.size(1), std::vector<double>(Dh));
        for (int64_t f = 0; f < w.size(1); ++f)
          for (int64_t d = 0; d < Dh; ++d) w_h[f][d] = wa[h][f][d];
        const auto want = plain(x_row, w_h);
        for (int64_t f = 0; f < out_dim; ++f) {
          const double err = std::abs(ga[b][h][t][f] - want[f]);
          worst = std::max(worst, relative ? err / want[f] : err);
        }
      }
  if (worst < tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "features vs plain computation: worst " << (relative ? "relative " : "") << "error "
         << worst << " >= " << tol << "\n  first features: " << head_values(got);
}

// The random matrix of feature map Map is a buffer w [H,Fw,Dh], not a parameter, drawn from the
// config's init_seed: the same seed gives the same matrix and another seed a different one.
template <class Map>
::testing::AssertionResult random_matrix_is_seeded_buffer(const std::string& map, int64_t d_feature,
                                                          int64_t out_dim) {
  const auto c = map_config(map, 16, 2, d_feature);  // H = 2, Dh = 8
  Map a(c);
  if (!a.parameters().empty()) return ::testing::AssertionFailure() << map << " has parameters";
  auto bufs = a.named_buffers();
  if (!bufs.contains("w")) return ::testing::AssertionFailure() << map << " has no buffer w";
  const std::vector<int64_t> want = {2, d_feature, 8};
  if (bufs["w"].sizes().vec() != want)
    return ::testing::AssertionFailure()
           << "w has shape " << bufs["w"].sizes() << ", want " << torch::IntArrayRef(want);
  if (a.out_dim() != out_dim)
    return ::testing::AssertionFailure() << "out_dim " << a.out_dim() << ", want " << out_dim;
  Map same(c);
  auto same_w = all_close(a.w, same.w, 0.0, "same init_seed");
  if (!same_w) return same_w;
  auto other_c = c;
  other_c.init_seed += 1;
  Map other(other_c);
  if (all_close(a.w, other.w, 1e-3))
    return ::testing::AssertionFailure()
           << "a different init_seed drew the same matrix (within 1e-3)";
  return ::testing::AssertionSuccess();
}

}  // namespace seqlab::testing
