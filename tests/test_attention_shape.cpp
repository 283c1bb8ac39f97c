// Hedgehog's measures (exp/attention_shape.h) on hand-made attention rows and matrices.
#include "seqlab/exp/attention_shape.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace seqlab;

TEST(AttentionShape, EntropyOfOneHotUniformAndUnnormalisedRows) {
  EXPECT_DOUBLE_EQ(row_entropy({0, 0, 1, 0}), 0);
  EXPECT_NEAR(row_entropy({0.25, 0.25, 0.25, 0.25}), std::log(4.0), 1e-12);
  EXPECT_NEAR(row_entropy({2, 2}), std::log(2.0), 1e-12);      // renormalised
  EXPECT_NEAR(row_entropy({1, -1, 1}), std::log(2.0), 1e-12);  // negatives count as 0
  EXPECT_DOUBLE_EQ(row_entropy({0, 0}), 0);
  // 0.5, 0.25, 0.25: 0.5 log 2 + 2 * 0.25 log 4 = 1.5 log 2.
  EXPECT_NEAR(row_entropy({0.5, 0.25, 0.25}), 1.5 * std::log(2.0), 1e-12);
}

TEST(AttentionShape, RanksAverageTies) {
  EXPECT_EQ(average_ranks({10, 20, 20, 5}), (std::vector<double>{2, 3.5, 3.5, 1}));
  EXPECT_EQ(average_ranks({3, 3, 3}), (std::vector<double>{2, 2, 2}));
}

TEST(AttentionShape, SpearmanOfKnownPairs) {
  EXPECT_DOUBLE_EQ(spearman({0.1, 0.2, 0.7}, {0.1, 0.2, 0.7}), 1);      // identical
  EXPECT_DOUBLE_EQ(spearman({0.1, 0.2, 0.7}, {1, 5, 100}), 1);          // same order only
  EXPECT_DOUBLE_EQ(spearman({0.1, 0.2, 0.7}, {0.7, 0.2, 0.1}), -1);     // reversed
  EXPECT_TRUE(std::isnan(spearman({0.1, 0.2, 0.7}, {0.3, 0.3, 0.3})));  // constant side
  EXPECT_TRUE(std::isnan(spearman({1}, {1})));
  // 1,2,3,4 against 1,3,2,4: d² = 0+1+1+0 = 2, rho = 1 - 6*2/(4*15) = 0.8.
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
}

namespace {
// Causal [1,1,T,T] rows: row t spreads over keys 0..t by `f(t, j)`, normalised.
torch::Tensor causal(int64_t T, double (*f)(int64_t, int64_t)) {
  auto a = torch::zeros({1, 1, T, T}, torch::kDouble);
  auto A = a.accessor<double, 4>();
  for (int64_t t = 0; t < T; ++t) {
    double s = 0;
    for (int64_t j = 0; j <= t; ++j) s += f(t, j);
    for (int64_t j = 0; j <= t; ++j) A[0][0][t][j] = f(t, j) / s;
  }
  return a;
}
}  // namespace

TEST(AttentionShape, MatricesPerHead) {
  const int64_t T = 6;
  // Reference: weights rising with the key index (softmax-like, spiky towards the newest key).
  const auto ref = causal(T, [](int64_t, int64_t j) { return std::exp(2.0 * j); });
  // The same rows: entropy equal, rho 1 on every row.
  auto same = attention_shape(ref, ref, 3);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].layer, 3);
  EXPECT_EQ(same[0].rows, T - 1);
  EXPECT_EQ(same[0].rows_rho, T - 1);
  EXPECT_NEAR(same[0].spearman, 1, 1e-12);
  EXPECT_NEAR(same[0].entropy, same[0].entropy_ref, 1e-12);
  // Uniform rows: the most diffuse (row t has log(t+1)), constant so no rank correlation.
  const auto uni = causal(T, [](int64_t, int64_t) { return 1.0; });
  auto u = attention_shape(ref, uni, 0)[0];
  double mean_log = 0;
  for (int64_t t = 1; t < T; ++t) mean_log += std::log(t + 1.0) / (T - 1);
  EXPECT_NEAR(u.entropy, mean_log, 1e-12);
  EXPECT_GT(u.entropy, u.entropy_ref);
  EXPECT_EQ(u.rows_rho, 0);
  EXPECT_TRUE(std::isnan(u.spearman));
  // Falling weights: the reverse ranking, rho -1.
  const auto rev = causal(T, [](int64_t, int64_t j) { return std::exp(-1.0 * j); });
  EXPECT_NEAR(attention_shape(ref, rev, 0)[0].spearman, -1, 1e-12);
  // One-hot on the newest key: entropy 0.
  const auto hot = causal(T, [](int64_t t, int64_t j) { return j == t ? 1.0 : 0.0; });
  EXPECT_DOUBLE_EQ(attention_shape(ref, hot, 0)[0].entropy, 0);
  // Negative weights are reported.
  auto neg = uni.clone();
  neg.index_put_({0, 0, 1, 0}, -1.0);  // row 1: |-1| of |-1| + 0.5
  EXPECT_NEAR(attention_shape(ref, neg, 0)[0].negative_mass, (1 / 1.5) / (T - 1), 1e-12);
  EXPECT_THROW(attention_shape(ref, torch::zeros({1, 1, T, T + 1}), 0), std::exception);
}
