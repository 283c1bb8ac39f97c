#include "seqlab/train/swag.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/task.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

// A trajectory of `n` snapshots of two parameters (shapes [2,3] and [4]).
std::vector<Named> trajectory(int n, uint64_t seed) {
  auto gen = make_generator(seed);
  std::vector<Named> out;
  for (int i = 0; i < n; ++i)
    out.push_back({{"a", torch::randn({2, 3}, gen) + i * 0.1}, {"b", torch::randn({4}, gen)}});
  return out;
}

// Empirical covariance of samples [S,P].
torch::Tensor covariance(const torch::Tensor& s) {
  auto c = s - s.mean(0, true);
  return c.t().matmul(c) / (s.size(0) - 1);
}

// Flattened samples of one parameter: [S,P] in float64.
torch::Tensor draw(const Swag& swag, const std::string& name, double scale, int S, uint64_t seed) {
  auto gen = make_generator(seed);
  std::vector<torch::Tensor> rows;
  for (int i = 0; i < S; ++i) rows.push_back(swag.sample(scale, gen).at(name).flatten());
  return torch::stack(rows).to(torch::kFloat64);
}

}  // namespace

TEST(Swag, RunningMomentsEqualBatchMomentsOfTheSnapshots) {
  const auto traj = trajectory(7, 1);
  Swag swag(traj[0], 3);
  for (const auto& t : traj) swag.collect(t);
  EXPECT_EQ(swag.snapshots(), 7);
  EXPECT_EQ(swag.columns(), 3);
  for (const std::string name : {"a", "b"}) {
    std::vector<torch::Tensor> ws;
    for (const auto& t : traj) ws.push_back((name == "a" ? t[0] : t[1]).second.to(torch::kFloat64));
    auto W = torch::stack(ws);  // [n,...]
    EXPECT_TRUE(torch::allclose(swag.mean().at(name), W.mean(0), 1e-9, 1e-12));
    auto var = (W * W).mean(0) - W.mean(0) * W.mean(0);
    EXPECT_TRUE(torch::allclose(swag.variance().at(name), var.clamp_min(0), 1e-9, 1e-12));
    // The last K deviations, each from the running mean right after its snapshot, oldest first.
    auto dev = swag.deviations(name);
    ASSERT_EQ(dev.size(0), 3);
    for (int k = 0; k < 3; ++k) {
      const int i = 4 + k;
      auto mean_i = W.narrow(0, 0, i + 1).mean(0);
      EXPECT_TRUE(torch::allclose(dev[k], W[i] - mean_i, 1e-9, 1e-12)) << name << " column " << k;
    }
  }
}

TEST(Swag, ScaleZeroIsSwaTheMeanWeights) {
  const auto traj = trajectory(5, 2);
  Swag swag(traj[0], 4);
  for (const auto& t : traj) swag.collect(t);
  auto gen = make_generator(3);
  auto s = swag.sample(0.0, gen);
  for (const auto& [name, m] : swag.mean())
    EXPECT_TRUE(torch::equal(s.at(name), m.to(torch::kFloat32)));
}

TEST(Swag, SampleCovarianceApproachesTheSwagCovariance) {
  const auto traj = trajectory(6, 4);
  const int K = 4;
  Swag swag(traj[0], K);
  for (const auto& t : traj) swag.collect(t);
  const double scale = 0.5;
  auto S = draw(swag, "a", scale, 40000, 5);       // [S,6]
  auto d = swag.deviations("a").reshape({K, -1});  // [K,6]
  auto expect = scale * (0.5 * torch::diag(swag.variance().at("a").flatten()) +
                         0.5 * d.t().matmul(d) / (K - 1));
  auto got = covariance(S);
  const double tol = 0.05 * expect.abs().max().item<double>();
  EXPECT_LT((got - expect).abs().max().item<double>(), tol);
  EXPECT_LT((S.mean(0) - swag.mean().at("a").flatten()).abs().max().item<double>(),
            3.0 * std::sqrt(expect.diag().max().item<double>() / 40000) + 1e-6);
}

TEST(Swag, RankZeroIsDiagonalSwag) {
  const auto traj = trajectory(6, 6);
  Swag swag(traj[0], 0);
  for (const auto& t : traj) swag.collect(t);
  EXPECT_EQ(swag.columns(), 0);
  auto S = draw(swag, "a", 1.0, 40000, 7);
  auto expect = torch::diag(swag.variance().at("a").flatten());
  auto got = covariance(S);
  EXPECT_LT((got - expect).abs().max().item<double>(), 0.05 * expect.max().item<double>());
}

TEST(Swag, TensorsRoundTripAndCollectingContinuesExactly) {
  const auto traj = trajectory(9, 8);
  Swag whole(traj[0], 3), first(traj[0], 3);
  for (const auto& t : traj) whole.collect(t);
  for (int i = 0; i < 5; ++i) first.collect(traj[i]);
  auto resumed = Swag::from_tensors(first.to_tensors(), "test");
  for (int i = 5; i < 9; ++i) resumed.collect(traj[i]);
  auto a = whole.to_tensors(), b = resumed.to_tensors();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, v] : a) EXPECT_TRUE(torch::equal(v, b.at(k))) << k;
  auto g1 = make_generator(9), g2 = make_generator(9);
  EXPECT_TRUE(torch::equal(whole.sample(1.0, g1).at("b"), resumed.sample(1.0, g2).at("b")));
}

TEST(Swag, RefusesSamplingWithoutSnapshotsAndBadFiles) {
  const auto traj = trajectory(1, 10);
  Swag swag(traj[0], 2);
  auto gen = make_generator(1);
  EXPECT_THROW(swag.sample(1.0, gen), Error);
  swag.collect(traj[0]);
  EXPECT_THROW(swag.sample(-1.0, gen), Error);
  auto t = swag.to_tensors();
  t.erase("swag.sq.a");
  EXPECT_THROW(Swag::from_tensors(t, "test"), Error);
  EXPECT_THROW(Swag::from_tensors({}, "test"), Error);
}
