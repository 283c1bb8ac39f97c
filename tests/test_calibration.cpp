#include "seqlab/methods/calibration.h"

#include "seqlab/tasks/task.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(Calibration, EceOfAHandWorkedExample) {
  // Four examples at confidence 0.9 (3 right) and two at 0.6 (both right):
  // ECE = 4/6 * |0.75 - 0.9| + 2/6 * |1.0 - 0.6| = 0.1 + 0.1333...
  auto probs =
      torch::tensor({0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.1, 0.9, 0.6, 0.4, 0.4, 0.6}, torch::kFloat64)
          .reshape({6, 2});
  auto target = torch::tensor({0, 0, 1, 1, 0, 1}, torch::kLong);
  EXPECT_NEAR(expected_calibration_error(probs, target), 4.0 / 6 * 0.15 + 2.0 / 6 * 0.4, 1e-12);
  // Perfectly confident and right: 0.
  auto sure = torch::tensor({1.0, 0.0, 0.0, 1.0}, torch::kFloat64).reshape({2, 2});
  EXPECT_NEAR(expected_calibration_error(sure, torch::tensor({0, 1}, torch::kLong)), 0.0, 1e-12);
  EXPECT_NEAR(mean_nll(probs, target), -(3 * std::log(0.9) + std::log(0.1) + 2 * std::log(0.6)) / 6,
              1e-12);
}

TEST(Calibration, TemperatureScalingRecoversTheTemperatureThatMadeTheLabels) {
  // Labels drawn from softmax(z / 2.5): the NLL-optimal temperature for logits z is about 2.5.
  auto gen = make_generator(11);
  auto z = torch::randn({20000, 5}, gen, torch::kFloat64) * 4.0;
  auto y = torch::multinomial(torch::softmax(z / 2.5, -1), 1, false, gen).squeeze(1);
  const double t = fit_temperature(z, y);
  EXPECT_NEAR(t, 2.5, 0.15);
  auto nll = [&](double T) { return mean_nll(torch::softmax(z / T, -1), y); };
  EXPECT_LT(nll(t), nll(1.0));
  EXPECT_LE(nll(t), nll(t * 1.05) + 1e-12);
  EXPECT_LE(nll(t), nll(t / 1.05) + 1e-12);
}

TEST(Calibration, CorrelationsEntropyAndKl) {
  auto a = torch::tensor({1.0, 2.0, 3.0, 4.0});
  EXPECT_NEAR(pearson(a, a * 2 + 1), 1.0, 1e-12);
  EXPECT_NEAR(pearson(a, -a), -1.0, 1e-12);
  EXPECT_EQ(pearson(a, torch::ones({4})), 0.0);
  // Monotone but not linear: Spearman 1, Pearson below 1.
  EXPECT_NEAR(spearman(a, a.pow(3)), 1.0, 1e-12);
  EXPECT_LT(pearson(a, torch::exp(a * 3)), 0.99);
  // Ties take average ranks: ranks of {1,1,2} are {1.5,1.5,3}.
  EXPECT_NEAR(spearman(torch::tensor({1.0, 1.0, 2.0}), torch::tensor({1.5, 1.5, 3.0})), 1.0, 1e-12);
  auto u = torch::full({1, 4}, 0.25, torch::kFloat64);
  EXPECT_NEAR(entropy(u).item<double>(), std::log(4.0), 1e-12);
  auto p = torch::tensor({0.5, 0.5, 0.0}, torch::kFloat64).reshape({1, 3});
  auto q = torch::tensor({0.25, 0.25, 0.5}, torch::kFloat64).reshape({1, 3});
  EXPECT_NEAR(mean_kl(p, q), std::log(2.0), 1e-12);
  EXPECT_NEAR(mean_kl(p, p), 0.0, 1e-12);
}
