#include "seqlab/mixers/feature_maps/hedgehog.h"

#include "feature_map_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {
// softmax over the last dim, by hand in double: exp(x_i - max) / sum.
torch::Tensor plain_softmax(const torch::Tensor& x) {
  auto xd = x.to(torch::kDouble).contiguous();
  auto out = torch::empty_like(xd);
  const int64_t n = xd.size(-1), rows = xd.numel() / n;
  const double* p = xd.data_ptr<double>();
  double* o = out.data_ptr<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double mx = p[r * n], sum = 0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, p[r * n + i]);
    for (int64_t i = 0; i < n; ++i) sum += (o[r * n + i] = std::exp(p[r * n + i] - mx));
    for (int64_t i = 0; i < n; ++i) o[r * n + i] /= sum;
  }
  return out;
}
}  // namespace

TEST(Hedgehog, AtInitIsSoftmaxOfXAndOfMinusX) {
  torch::manual_seed(1);
  HedgehogImpl fm(map_config("hedgehog"));  // F = Dh = 8: W = I, b = 0
  auto x = torch::randn({2, 2, 5, 8}) * 2.0;
  auto want = torch::cat({plain_softmax(x), plain_softmax(-x)}, -1);  // [2,2,5,16]
  for (bool is_query : {true, false})
    EXPECT_TRUE(all_close(fm.forward(x, is_query), want, 1e-6, "[softmax(x), softmax(-x)]"))
        << "is_query " << is_query;
}

TEST(Hedgehog, HalvesSumToOneForAnyWeights) {
  torch::manual_seed(2);
  HedgehogImpl fm(map_config("hedgehog", 16, 2, 6));
  {
    torch::NoGradGuard ng;
    fm.wq.normal_();
    fm.bq.normal_();
  }
  auto phi = fm.forward(torch::randn({2, 2, 5, 8}), true);  // [2,2,5,12]
  ASSERT_EQ(phi.size(-1), 12);
  auto ones = torch::ones({2, 2, 5});
  EXPECT_TRUE(all_close(phi.narrow(-1, 0, 6).sum(-1), ones, 1e-5, "softmax(u) half"));
  EXPECT_TRUE(all_close(phi.narrow(-1, 6, 6).sum(-1), ones, 1e-5, "softmax(-u) half"));
  EXPECT_TRUE((phi > 0).all().item<bool>());
}

TEST(Hedgehog, QueriesAndKeysHaveSeparateMaps) {
  torch::manual_seed(3);
  HedgehogImpl fm(map_config("hedgehog"));
  auto x = torch::randn({1, 2, 4, 8});
  auto k_before = fm.forward(x, false);
  auto q_before = fm.forward(x, true);
  {
    torch::NoGradGuard ng;
    fm.wq.add_(torch::randn_like(fm.wq));
  }
  EXPECT_TRUE(all_close(fm.forward(x, false), k_before, 0.0, "key map untouched"));
  EXPECT_FALSE(all_close(fm.forward(x, true), q_before, 1e-4, "query map changed"));
}

TEST(Hedgehog, ParameterNamesAndShapesAreTheContract) {
  HedgehogImpl fm(map_config("hedgehog", 16, 2, 12));
  auto p = fm.named_parameters();
  ASSERT_EQ(p.size(), 4u);
  for (auto n : {"wq", "wk"}) EXPECT_EQ(p[n].sizes().vec(), (std::vector<int64_t>{2, 12, 8})) << n;
  for (auto n : {"bq", "bk"}) EXPECT_EQ(p[n].sizes().vec(), (std::vector<int64_t>{2, 12})) << n;
  EXPECT_EQ(fm.out_dim(), 24);
  // F > Dh: the identity fills the first Dh rows, the rest start at zero.
  EXPECT_TRUE(all_close(p["wq"][0].narrow(0, 0, 8), torch::eye(8), 0.0, "identity block"));
  EXPECT_EQ(p["wq"][0].narrow(0, 8, 4).abs().sum().item<double>(), 0.0);
}
