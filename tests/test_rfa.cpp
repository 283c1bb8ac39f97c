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
  auto got = fm.forward(x, true).to(torch::kDouble);
  ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{2, 2, 3, 12}));
  auto xd = x.to(torch::kDouble), w = fm.w.to(torch::kDouble);
  auto xa = xd.accessor<double, 4>(), ga = got.accessor<double, 4>();
  auto wa = w.accessor<double, 3>();
  double worst = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 3; ++t) {
        double norm = 0;
        for (int64_t d = 0; d < 8; ++d) norm += xa[b][h][t][d] * xa[b][h][t][d];
        norm = std::sqrt(norm);
        for (int64_t f = 0; f < 6; ++f) {
          double wx = 0;
          for (int64_t d = 0; d < 8; ++d) wx += wa[h][f][d] * xa[b][h][t][d] / norm;
          worst = std::max(worst, std::abs(ga[b][h][t][f] - std::sin(wx) / std::sqrt(6.0)));
          worst = std::max(worst, std::abs(ga[b][h][t][6 + f] - std::cos(wx) / std::sqrt(6.0)));
        }
      }
  EXPECT_LT(worst, 1e-5);
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
  RfaImpl a(map_config("rfa", 16, 2, 6));
  EXPECT_TRUE(a.parameters().empty());
  auto bufs = a.named_buffers();
  ASSERT_TRUE(bufs.contains("w"));
  EXPECT_EQ(bufs["w"].sizes().vec(), (std::vector<int64_t>{2, 6, 8}));
  EXPECT_EQ(a.out_dim(), 12);
  RfaImpl same(map_config("rfa", 16, 2, 6));
  EXPECT_TRUE(all_close(a.w, same.w, 0.0, "same init_seed"));
  auto c = map_config("rfa", 16, 2, 6);
  c.init_seed += 1;
  RfaImpl other(c);
  EXPECT_FALSE(all_close(a.w, other.w, 1e-3, "different init_seed"));
}
