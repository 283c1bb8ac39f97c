#include "seqlab/exp/attention_shape.h"

#include "seqlab/core/error.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace seqlab {

double row_entropy(const std::vector<double>& w) {
  double sum = 0;
  for (double x : w) sum += std::max(x, 0.0);
  if (sum <= 0) return 0;
  double h = 0;
  for (double x : w)
    if (x > 0) h -= (x / sum) * std::log(x / sum);
  return h;
}

std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double r = (i + j) / 2.0 + 1;  // positions i..j (0-based) share ranks i+1..j+1
    for (size_t k = i; k <= j; ++k) rank[idx[k]] = r;
    i = j + 1;
  }
  return rank;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  SEQLAB_CHECK(a.size() == b.size(), "spearman: {} values against {}", a.size(), b.size());
  if (a.size() < 2) return NAN;
  const auto ra = average_ranks(a), rb = average_ranks(b);
  const double mean = (a.size() + 1) / 2.0;  // the mean rank, ties or not
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return NAN;
  return sab / std::sqrt(saa * sbb);
}

std::vector<HeadShape> attention_shape(const torch::Tensor& ref, const torch::Tensor& w,
                                       int64_t layer) {
  SEQLAB_CHECK(ref.dim() == 4 && ref.sizes() == w.sizes() && ref.size(2) == ref.size(3),
               "attention_shape: weights must both be [B,H,T,T], got {} and {}", ref.sizes().vec(),
               w.sizes().vec());
  const auto a = ref.to(torch::kCPU, torch::kDouble).contiguous();
  const auto b = w.to(torch::kCPU, torch::kDouble).contiguous();
  const auto A = a.accessor<double, 4>(), W = b.accessor<double, 4>();
  const int64_t B = a.size(0), H = a.size(1), T = a.size(2);
  std::vector<HeadShape> out;
  for (int64_t h = 0; h < H; ++h) {
    HeadShape s;
    s.layer = layer, s.head = h;
    double rho_sum = 0;
    for (int64_t i = 0; i < B; ++i)
      for (int64_t t = 1; t < T; ++t) {
        std::vector<double> p(t + 1), q(t + 1);
        double neg = 0, abs = 0;
        for (int64_t j = 0; j <= t; ++j) {
          p[j] = A[i][h][t][j], q[j] = W[i][h][t][j];
          abs += std::abs(q[j]);
          if (q[j] < 0) neg -= q[j];
        }
        s.entropy_ref += row_entropy(p);
        s.entropy += row_entropy(q);
        s.negative_mass += abs > 0 ? neg / abs : 0;
        ++s.rows;
        if (const double r = spearman(p, q); !std::isnan(r)) rho_sum += r, ++s.rows_rho;
      }
    if (s.rows) {
      s.entropy_ref /= s.rows, s.entropy /= s.rows, s.negative_mass /= s.rows;
    }
    s.spearman = s.rows_rho ? rho_sum / s.rows_rho : NAN;
    out.push_back(s);
  }
  return out;
}

}  // namespace seqlab
