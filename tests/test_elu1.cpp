#include "seqlab/mixers/feature_maps/elu1.h"

#include "feature_map_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

TEST(Elu1, IsEluPlusOneElementwise) {
  torch::manual_seed(1);
  Elu1Impl fm(map_config("elu1"));
  auto x = torch::randn({2, 2, 5, 8}) * 3.0;
  auto want = x.clone();
  float* p = want.data_ptr<float>();
  for (int64_t i = 0; i < want.numel(); ++i) p[i] = p[i] > 0 ? p[i] + 1.0f : std::exp(p[i]);
  auto got = fm.forward(x, true);
  EXPECT_TRUE(all_close(got, want, 1e-6, "elu1 vs elementwise"));
  EXPECT_TRUE((got > 0).all().item<bool>());
  EXPECT_TRUE(all_close(fm.forward(x, false), got, 0.0, "same map for q and k"));
}

TEST(Elu1, ShapeAndNoParameters) {
  Elu1Impl fm(map_config("elu1", 16, 2, 32));
  EXPECT_EQ(fm.out_dim(), 8);  // elementwise: d_feature is ignored
  EXPECT_TRUE(fm.parameters().empty());
  EXPECT_FALSE(fm.exponential());
  EXPECT_THROW(fm.forward(torch::randn({2, 5, 8}), true), Error);
  EXPECT_THROW(fm.forward(torch::randn({2, 3, 5, 8}), true), Error);
}
