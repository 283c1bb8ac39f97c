#include "seqlab/mixers/feature_maps/rfa.h"

#include "feature_map_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

TEST(Rfa, MatchesAPlainComputation) {
  // phi(x) = sqrt(1/F) [sin(W x^), cos(W x^)], x^ = x / |x|, computed by hand in double.
  torch::manual_seed(1);
  RfaImpl fm(map_config("rfa", 16, 2, 6));
  auto x = torch::randn({2, 2, 3, 8});
  auto plain = [](const std::vector<double>& xr, const std::vector<std::vector<double>>& w) {
    double norm = 0;
    for (int64_t d = 0; d < 8; ++d) norm += xr[d] * xr[d];
    norm = std::sqrt(norm);
    std::vector<double> phi(12);
    for (int64_t f = 0; f < 6; ++f) {
      double wx = 0;
      for (int64_t d = 0; d < 8; ++d) wx += w[f][d] * xr[d] / norm;
      phi[f] = std::sin(wx) / std::sqrt(6.0);
      phi[6 + f] = std::cos(wx) / std::sqrt(6.0);
    }
    return phi;
  };
  EXPECT_TRUE(matches_plain_features(fm, x, 12, plain, 1e-5));
  EXPECT_TRUE(all_close(fm.forward(x, false), fm.forward(x, true), 0.0, "same map for q and k"));
}

TEST(Rfa, EstimatesTheGaussianKernelOfUnitVectors) {
  // E_W[phi(q).phi(k)] = exp(-|q^ - k^|^2 / 2). With F = 8192 each estimate has standard deviation
  // below 1/sqrt(2F) = 0.008, so 0.04 is a 5-sigma bound.
  torch::manual_seed(2);
  auto c = map_config("rfa", 8, 2, 8192);
  RfaImpl fm(c);
  auto q = torch::randn({1, 2, 16, 4}), k = torch::randn({1, 2, 16, 4});
  auto est = (fm.forward(q, true) * fm.forward(k, false)).sum(-1);  // [1,2,16]
  auto qn = q / q.norm(2, -1, true), kn = k / k.norm(2, -1, true);
  auto exact = torch::exp(-(qn - kn).square().sum(-1) / 2);  // [1,2,16]
  EXPECT_TRUE(all_close(est, exact, 0.04, "kernel estimate vs Gaussian kernel"));
  // phi(x).phi(x) = mean of sin^2 + cos^2 = 1 for every draw, not just on average.
  auto self = (fm.forward(q, true).square()).sum(-1);
  EXPECT_TRUE(all_close(self, torch::ones_like(self), 1e-5, "phi(x).phi(x)"));
}

TEST(Rfa, RandomMatrixIsASeededBufferNotAParameter) {
  EXPECT_TRUE(random_matrix_is_seeded_buffer<RfaImpl>("rfa", 6, /*out_dim=*/12));
}
