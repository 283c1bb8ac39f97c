#include "seqlab/mixers/feature_maps/t2r.h"

#include "feature_map_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

TEST(T2r, IsReluOfAPerHeadAffineMap) {
  // phi(x)_f = relu(sum_d W[h,f,d] x_d + b[h,f]), computed by hand in double.
  torch::manual_seed(1);
  T2rImpl fm(map_config("t2r", 16, 2, 6));
  auto x = torch::randn({2, 2, 3, 8});
  auto got = fm.forward(x, true).to(torch::kDouble);
  ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{2, 2, 3, 6}));
  auto xd = x.to(torch::kDouble), w = fm.w.detach().to(torch::kDouble);
  auto bd = fm.b.detach().to(torch::kDouble);
  auto xa = xd.accessor<double, 4>(), ga = got.accessor<double, 4>();
  auto wa = w.accessor<double, 3>();
  auto ba = bd.accessor<double, 2>();
  double worst = 0;
  int64_t zeros = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t f = 0; f < 6; ++f) {
          double u = ba[h][f];
          for (int64_t d = 0; d < 8; ++d) u += wa[h][f][d] * xa[b][h][t][d];
          zeros += u <= 0;
          worst = std::max(worst, std::abs(ga[b][h][t][f] - std::max(u, 0.0)));
        }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(zeros, 0);  // the relu is exercised
}

TEST(T2r, OneMapSharedByQueriesAndKeys) {
  torch::manual_seed(2);
  T2rImpl fm(map_config("t2r"));
  auto x = torch::randn({2, 2, 5, 8});
  EXPECT_TRUE(all_close(fm.forward(x, true), fm.forward(x, false), 0.0, "q map vs k map"));
}

TEST(T2r, ParameterNamesAndShapesAreTheContract) {
  T2rImpl fm(map_config("t2r", 16, 2, 12));
  auto p = fm.named_parameters();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p["w"].sizes().vec(), (std::vector<int64_t>{2, 12, 8}));
  EXPECT_EQ(p["b"].sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(fm.out_dim(), 12);
  T2rImpl dflt(map_config("t2r"));
  EXPECT_EQ(dflt.out_dim(), 8);  // d_feature 0 = d_head
}

TEST(T2r, GradientReachesWAndB) {
  torch::manual_seed(3);
  T2rImpl fm(map_config("t2r"));
  fm.forward(torch::randn({2, 2, 5, 8}), true).sum().backward();
  EXPECT_GT(fm.w.grad().abs().sum().item<double>(), 0.0);
  EXPECT_GT(fm.b.grad().abs().sum().item<double>(), 0.0);
}
