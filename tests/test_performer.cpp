#include "seqlab/mixers/feature_maps/performer.h"

#include "feature_map_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

TEST(Performer, MatchesAPlainComputation) {
  // phi(x) = exp(W x~ - |x~|^2 / 2) / sqrt(F), x~ = x Dh^-1/4, computed by hand in double.
  torch::manual_seed(1);
  PerformerImpl fm(map_config("performer", 16, 2, 6));
  auto x = torch::randn({2, 2, 3, 8});
  auto plain = [](const std::vector<double>& xr, const std::vector<std::vector<double>>& w) {
    const double s = std::pow(8.0, -0.25);
    double sq = 0;
    for (int64_t d = 0; d < 8; ++d) sq += (xr[d] * s) * (xr[d] * s);
    std::vector<double> phi(6);
    for (int64_t f = 0; f < 6; ++f) {
      double wx = 0;
      for (int64_t d = 0; d < 8; ++d) wx += w[f][d] * xr[d] * s;
      phi[f] = std::exp(wx - sq / 2) / std::sqrt(6.0);
    }
    return phi;
  };
  EXPECT_TRUE(matches_plain_features(fm, x, 6, plain, 1e-5, /*relative=*/true));
  auto lf = fm.log_features(x, false);
  EXPECT_TRUE(all_close(torch::exp(lf), fm.forward(x, false), 1e-6, "exp(log_features)"));
  EXPECT_TRUE(fm.exponential());
}

TEST(Performer, EstimatesSoftmaxKernel) {
  // E_W[phi(q).phi(k)] = exp(q.k / sqrt(Dh)), the unnormalised softmax kernel. With F = 8192
  // orthogonal features and |q|, |k| ~ 1 the relative error of one estimate is a few percent at
  // most; 0.05 relative bounds every one of the 32 pairs.
  torch::manual_seed(2);
  PerformerImpl fm(map_config("performer", 8, 2, 8192));
  auto q = torch::randn({1, 2, 16, 4}) * 0.5, k = torch::randn({1, 2, 16, 4}) * 0.5;
  auto est = (fm.forward(q, true) * fm.forward(k, false)).sum(-1);  // [1,2,16]
  auto exact = torch::exp((q * k).sum(-1) / 2.0);                   // sqrt(Dh) = 2
  EXPECT_TRUE(all_close(est / exact, torch::ones_like(exact), 0.05, "estimate / exact kernel"));
}

TEST(Performer, RowsAreOrthogonalInBlocksOfDh) {
  PerformerImpl fm(map_config("performer", 16, 2, 20));  // Dh = 8: blocks of 8, 8, 4 rows
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t r0 = 0; r0 < 20; r0 += 8) {
      auto blk = fm.w[h].narrow(0, r0, std::min<int64_t>(8, 20 - r0)).to(torch::kDouble);
      auto g = torch::matmul(blk, blk.t());  // [n,n]
      auto off = g - torch::diag(torch::diag(g));
      EXPECT_LT(off.abs().max().item<double>(), 1e-4) << "head " << h << " block " << r0;
    }
  // Row norms follow the chi distribution of Gaussian rows (mean about sqrt(Dh)), not all equal.
  auto norms = fm.w.norm(2, -1);
  EXPECT_GT(norms.std().item<double>(), 0.1);
  EXPECT_NEAR(norms.mean().item<double>(), std::sqrt(8.0), 0.6);
}

TEST(Performer, RandomMatrixIsASeededBufferNotAParameter) {
  EXPECT_TRUE(random_matrix_is_seeded_buffer<PerformerImpl>("performer", 6, /*out_dim=*/6));
}
