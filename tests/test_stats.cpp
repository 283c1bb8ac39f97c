// The report statistics (exp/stats.h): the t quantile against the published table and the normal
// limit, the mean's interval and Welch's interval of a difference against hand-computed values.
#include "seqlab/exp/stats.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace seqlab;

TEST(Stats, TQuantileMatchesTheTable) {
  // Student t 0.975 quantiles (any table; to 3 decimals).
  const std::vector<std::pair<double, double>> known = {{1, 12.706}, {2, 4.303},  {4, 2.776},
                                                        {9, 2.262},  {30, 2.042}, {40, 2.021},
                                                        {60, 2.000}, {120, 1.980}};
  for (auto [df, t] : known) EXPECT_NEAR(t_quantile_975(df), t, 1e-3) << "df " << df;
  EXPECT_NEAR(t_quantile_975(1e6), 1.960, 1e-3);
  EXPECT_THROW(t_quantile_975(0.5), Error);
}

TEST(Stats, TQuantileFallsMonotonicallyThroughFractionalDf) {
  double prev = INFINITY;
  for (double df = 1; df < 200; df += 0.25) {
    const double t = t_quantile_975(df);
    EXPECT_LT(t, prev) << "df " << df;
    prev = t;
  }
  // Between the table's rows it lies between them (df 2.5: t between 4.303 and 3.182).
  EXPECT_GT(t_quantile_975(2.5), 3.182);
  EXPECT_LT(t_quantile_975(2.5), 4.303);
}

TEST(Stats, MeanIntervalIsTTimesStandardError) {
  // 1, 2, 3: mean 2, sd 1, half-width t_{.975,2} / sqrt(3) = 4.3027 / 1.7321 = 2.4841.
  const auto s = sample_stats({1, 2, 3});
  const auto i = mean_interval(s);
  ASSERT_TRUE(i.ok);
  EXPECT_NEAR(i.lo, 2 - 2.4841, 1e-3);
  EXPECT_NEAR(i.hi, 2 + 2.4841, 1e-3);
  EXPECT_FALSE(mean_interval(sample_stats({5})).ok);
  EXPECT_EQ(fmt_mean_sd_ci(sample_stats({5}), 2), "5.00 (n=1, no interval)");
  EXPECT_EQ(fmt_mean_sd_ci(s, 2), "2.00 ± 1.00 [-0.48, 4.48]");
  EXPECT_EQ(fmt_mean_sd_ci(sample_stats({}), 2), "");
}

TEST(Stats, WelchDifferenceByHand) {
  // a = 1,2,3 (mean 2, var 1), b = 4,6,8 (mean 6, var 4): se² = 1/3 + 4/3 = 5/3,
  // df = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 2.7778/0.9444 = 2.941; the interval is
  // -4 ± t(2.941) * 1.2910.
  const auto d = welch_difference({1, 2, 3}, {4, 6, 8});
  EXPECT_DOUBLE_EQ(d.diff, -4);
  EXPECT_NEAR(d.df, 2.941, 1e-3);
  ASSERT_TRUE(d.ci.ok);
  const double h = t_quantile_975(d.df) * std::sqrt(5.0 / 3);
  EXPECT_NEAR(d.ci.hi, -4 + h, 1e-9);
  EXPECT_GT(h, 3.182 * 1.2910);  // df < 3: wider than t_{.975,3} would make it
  // -4 ± 4.1: the interval includes 0 and the text says so.
  EXPECT_TRUE(d.ci.contains_zero());
  EXPECT_NE(fmt_difference(d, 2).find("not resolved (the interval includes 0)"), std::string::npos);
  // Equal variances 1 and 1: df = 4 exactly, -7 ± 2.7764 * sqrt(2/3) = [-9.267, -4.733].
  const auto r = welch_difference({1, 2, 3}, {8, 9, 10});
  EXPECT_NEAR(r.df, 4, 1e-12);
  EXPECT_NEAR(r.ci.lo, -9.267, 1e-3);
  EXPECT_NEAR(r.ci.hi, -4.733, 1e-3);
  EXPECT_FALSE(r.ci.contains_zero());
  EXPECT_EQ(fmt_difference(r, 2), "-7.00 [-9.27, -4.73], Welch 95%, n = 3 vs 3");
  // One value on a side: no interval is invented.
  const auto one = welch_difference({1, 2, 3}, {7});
  EXPECT_FALSE(one.ci.ok);
  EXPECT_EQ(fmt_difference(one, 1), "-5.0, n = 3 vs 1, no interval: not resolved");
  // No spread on either side: the interval is the point.
  const auto flat = welch_difference({2, 2}, {1, 1});
  ASSERT_TRUE(flat.ci.ok);
  EXPECT_DOUBLE_EQ(flat.ci.lo, 1);
  EXPECT_DOUBLE_EQ(flat.ci.hi, 1);
}

TEST(Stats, HalfWidthAndBestAgainstTheRest) {
  EXPECT_EQ(half_width_95({0.5}), 0.0);
  // sd 1, n = 3: t_{.975,2} = 4.303, h = 4.303 / sqrt(3).
  EXPECT_NEAR(half_width_95({1, 2, 3}), 4.303 / std::sqrt(3.0), 1e-3);
  EXPECT_EQ(best_vs_rest({{"a", {1, 2, 3}}}, 2), "");
  const auto s = best_vs_rest({{"a", {1, 2, 3}}, {"b", {8, 9, 10}}, {"c", {4, 6, 8}}}, 2);
  EXPECT_EQ(s,
            "- b − a: +7.00 [+4.73, +9.27], Welch 95%, n = 3 vs 3\n"
            "- b − c: " +
                fmt_difference(welch_difference({8, 9, 10}, {4, 6, 8}), 2) + "\n");
  EXPECT_NE(s.find("+3.00 [-"), std::string::npos) << s;
  EXPECT_NE(s.find("not resolved"), std::string::npos) << s;
}
