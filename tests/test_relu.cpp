#include "seqlab/mixers/feature_maps/relu.h"

#include "feature_map_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

TEST(Relu, IsMaxWithZeroElementwise) {
  torch::manual_seed(1);
  ReluImpl fm(map_config("relu"));
  auto x = torch::randn({2, 2, 5, 8});
  auto want = x.clone();
  float* p = want.data_ptr<float>();
  for (int64_t i = 0; i < want.numel(); ++i) p[i] = p[i] > 0 ? p[i] : 0.0f;
  auto got = fm.forward(x, true);
  EXPECT_TRUE(all_close(got, want, 0.0, "relu vs elementwise"));
  EXPECT_TRUE(all_close(fm.forward(x, false), got, 0.0, "same map for q and k"));
}

TEST(Relu, ShapeAndNoParameters) {
  ReluImpl fm(map_config("relu", 16, 2, 32));
  EXPECT_EQ(fm.out_dim(), 8);  // elementwise: d_feature is ignored
  EXPECT_TRUE(fm.parameters().empty());
  EXPECT_THROW(fm.forward(torch::randn({2, 2, 5, 4}), true), Error);
}
