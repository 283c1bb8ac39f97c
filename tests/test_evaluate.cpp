// The input-blind baseline (train/evaluate.h: evaluate_blind), checked against values worked out
// independently of it: exact binomial sums for bucket_sort, label counts for a classifier.
#include "seqlab/train/evaluate.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace seqlab;

namespace {

std::unique_ptr<Task> task_named(const std::string& name) {
  TaskConfig c;
  c.task = name;
  c.min_len = 0;
  return make_task(c);
}

// P(Bin(n, p) <= j) for j = 0..n.
std::vector<double> binomial_cdf(int64_t n, double p) {
  std::vector<double> cdf(n + 1);
  double acc = 0;
  for (int64_t j = 0; j <= n; ++j) {
    double log_pmf = std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0);
    log_pmf += (p > 0 ? j * std::log(p) : (j == 0 ? 0 : -INFINITY)) +
               (p < 1 ? (n - j) * std::log1p(-p) : (j == n ? 0 : -INFINITY));
    acc += std::exp(log_pmf);
    cdf[j] = std::min(acc, 1.0);
  }
  return cdf;
}

// The best input-blind per-token accuracy on bucket_sort with k uniform symbols and input length
// n: output slot j holds symbol c exactly when #{x < c} <= j < #{x <= c}, so
// P(y_j = c) = P(Bin(n, c/k) <= j) - P(Bin(n, (c+1)/k) <= j), and the best guess at j scores
// max_c P(y_j = c).
double bucket_sort_blind(int64_t n, int64_t k) {
  std::vector<std::vector<double>> cdf;
  for (int64_t c = 0; c <= k; ++c) cdf.push_back(binomial_cdf(n, static_cast<double>(c) / k));
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    double best = 0;
    for (int64_t c = 0; c < k; ++c) best = std::max(best, cdf[c][j] - cdf[c + 1][j]);
    sum += best;
  }
  return sum / static_cast<double>(n);
}

}  // namespace

TEST(EvaluateBlind, BucketSortMatchesTheExactBinomialValue) {
  auto t = task_named("bucket_sort");
  for (int64_t n : {40, 500}) {
    const int64_t T = 2 * n + 1;  // x, SEP, |y| = n blanks
    const double want = bucket_sort_blind(n, 5);
    auto r = evaluate_blind(*t, T, 512, 64, 7);
    EXPECT_EQ(r.n, 512 * n);
    EXPECT_NEAR(r.accuracy, want, 0.01) << "n " << n;
    // A whole output is guessed only when every symbol count is the typical one: rare at n = 40,
    // never at n = 500.
    EXPECT_LT(r.seq_accuracy, n == 40 ? 0.02 : 1e-9) << "n " << n;
  }
  // The figures the header quotes, and why a per-token score has to be read against them.
  EXPECT_NEAR(bucket_sort_blind(40, 5), 0.78, 0.005);
  EXPECT_NEAR(bucket_sort_blind(500, 5), 0.94, 0.005);
}

TEST(EvaluateBlind, ParityIsAboutHalf) {
  auto t = task_named("parity");
  auto r = evaluate_blind(*t, 40, 512, 32, 3);
  EXPECT_NEAR(r.accuracy, 0.5, 0.03);
  EXPECT_EQ(r.n, 512 * 40);
}

// A classifier's blind guess is one class for every example: its accuracy is that class's share
// of the evaluation labels, counted here on the very sequences evaluate() scores.
TEST(EvaluateBlind, ClassifierScoresOneClassShareOfTheTestLabels) {
  auto t = task_named("string_equality");
  ASSERT_EQ(t->head(), "classify");
  const int64_t T = 17, n = 256, batch = 32;
  const uint64_t seed = 5;
  auto r = evaluate_blind(*t, T, n, batch, seed);
  std::vector<double> share(t->n_classes(), 0);
  const uint64_t base = eval_seed(seed, T);
  for (int64_t i = 0; i * batch < n; ++i) {
    auto b = t->sample(batch, T, mix_seed(base, i));
    for (int64_t j = 0; j < batch; ++j) share[b.target[j].item<int64_t>()] += 1.0 / n;
  }
  bool matches_one = false;
  for (double s : share) matches_one = matches_one || std::abs(s - r.accuracy) < 1e-9;
  EXPECT_TRUE(matches_one) << r.accuracy;
  EXPECT_EQ(r.n, n);
}

TEST(EvaluateBlind, IsDeterministicPerSeed) {
  auto t = task_named("bucket_sort");
  EXPECT_EQ(evaluate_blind(*t, 81, 64, 32, 1).accuracy, evaluate_blind(*t, 81, 64, 32, 1).accuracy);
}

// anbn has one string per length: a guess per position would reproduce it and score 1, which
// says nothing about counting. There is no baseline, and asking for one is an error.
TEST(EvaluateBlind, AnbnHasNone) {
  auto t = task_named("anbn");
  EXPECT_FALSE(t->has_blind_baseline());
  EXPECT_THROW(evaluate_blind(*t, 42, 16, 16, 0), Error);
  EXPECT_TRUE(task_named("bucket_sort")->has_blind_baseline());
}
