// difficulty: the indicator counts, p*(y|x), the margin and the majority label are recomputed from
// the tokens alone; the sampled targets and the annotators' votes are checked against p* with
// binomial tolerances; splits never share a seed stream.
#include "seqlab/tasks/difficulty.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace seqlab;

namespace {

constexpr int64_t K = 5, A = 100;

// One row read back from the tokens alone.
struct Row {
  std::vector<int64_t> counts;
  std::vector<double> p;  // softmax(counts), beta = 1
  int64_t argmax = 0, margin = 0, length = 0;
};

Row read_row(const std::vector<int64_t>& in, const std::vector<int64_t>& v, int64_t i, int64_t C) {
  const int64_t T = static_cast<int64_t>(in.size()), pad = 2 * C + 4;
  Row r;
  r.counts.assign(C, 0);
  for (int64_t t = 0; t < T; ++t) {
    if (!v[t]) {
      EXPECT_EQ(in[t], pad) << "row " << i << " t " << t;
      continue;
    }
    EXPECT_EQ(t, r.length) << "valid is a prefix";
    ++r.length;
    EXPECT_TRUE(in[t] >= 0 && in[t] < pad) << in[t];
    if (in[t] < 2 * C) ++r.counts[in[t] / 2];
  }
  double z = 0;
  for (int64_t y = 0; y < C; ++y) z += std::exp(static_cast<double>(r.counts[y]));
  for (int64_t y = 0; y < C; ++y) r.p.push_back(std::exp(static_cast<double>(r.counts[y])) / z);
  auto sorted = r.counts;
  std::sort(sorted.rbegin(), sorted.rend());
  r.margin = sorted[0] - sorted[1];
  r.argmax = std::max_element(r.counts.begin(), r.counts.end()) - r.counts.begin();
  return r;
}

// |observed - expected| within 5 standard deviations of a sum of Bernoullis (plus one for slack).
void expect_binomial(double observed, double expected, double variance, const std::string& what) {
  EXPECT_LE(std::abs(observed - expected), 5 * std::sqrt(variance) + 1)
      << what << ": observed " << observed << ", expected " << expected << " +- "
      << std::sqrt(variance);
}

}  // namespace

TEST(Difficulty, EverythingRecomputedFromTheTokens) {
  for (int64_t C : {2, 3, 7}) {
    SCOPED_TRACE(C);
    TaskConfig cfg;
    cfg.vocab = C;
    DifficultyTask task(cfg);
    ASSERT_EQ(task.vocab_size(), 2 * C + 5);
    ASSERT_EQ(task.n_classes(), C);
    ASSERT_EQ(task.min_length(), 3 * C + 5);
    for (Split sp : {Split::train, Split::valid, Split::test}) {
      const int64_t B = 3000, T = 3 * C + 20;
      const auto b = task.sample_split(B, T, 77, sp);
      ASSERT_EQ(b.soft.sizes(), (std::vector<int64_t>{B, C}));
      ASSERT_EQ(b.difficulty.sizes(), (std::vector<int64_t>{B}));
      EXPECT_TRUE(b.mask.equal(b.valid));
      const auto soft = b.soft.accessor<float, 2>();
      const auto target = b.target.accessor<int64_t, 1>();
      const auto diff = b.difficulty.accessor<float, 1>();
      const auto inputs = seqlab::testing::rows(b.input), valids = seqlab::testing::rows(b.valid);
      // Per margin: how often the target is the majority class, and its expectation under p*.
      std::vector<double> hit(K + 1), want(K + 1), var(K + 1), mean_p(K + 1), n_margin(K + 1);
      std::vector<double> votes(C), vote_want(C), vote_var(C), tgt(C), tgt_want(C), tgt_var(C);
      std::vector<int64_t> majority(C);
      for (int64_t i = 0; i < B; ++i) {
        const Row r = read_row(inputs[i], valids[i], i, C);
        ASSERT_GE(r.margin, 1) << "a unique majority class";
        ASSERT_LE(r.margin, K);
        ASSERT_EQ(diff[i], static_cast<float>(K - r.margin));
        ++majority[r.argmax];
        const int64_t y = target[i];
        if (sp != Split::train) {
          ASSERT_EQ(y, r.argmax) << "valid/test targets are the majority label";
        } else {
          hit[r.margin] += y == r.argmax;
          want[r.margin] += r.p[r.argmax];
          var[r.margin] += r.p[r.argmax] * (1 - r.p[r.argmax]);
          tgt[y] += 1;
          for (int64_t c = 0; c < C; ++c)
            tgt_want[c] += r.p[c], tgt_var[c] += r.p[c] * (1 - r.p[c]);
          ASSERT_GE(soft[i][y], 0.5f / A) << "annotator 0 is one of the A";
        }
        mean_p[r.margin] += r.p[r.argmax];
        n_margin[r.margin] += 1;
        double sum = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double s = soft[i][c];
          ASSERT_NEAR(s * A, std::round(s * A), 1e-3) << "votes of A = 100 annotators";
          sum += s;
          votes[c] += s * A;
          vote_want[c] += A * r.p[c];
          vote_var[c] += A * r.p[c] * (1 - r.p[c]);
        }
        ASSERT_NEAR(sum, 1.0, 1e-5);
      }
      // Exactly balanced true classes.
      for (int64_t c = 0; c < C; ++c)
        EXPECT_TRUE(majority[c] == B / C || majority[c] == B / C + 1) << majority[c];
      for (int64_t c = 0; c < C; ++c)
        expect_binomial(votes[c], vote_want[c], vote_var[c],
                        "votes for class " + std::to_string(c));
      if (sp == Split::train) {
        for (int64_t m = 1; m <= K; ++m)
          expect_binomial(hit[m], want[m], var[m],
                          "majority targets at margin " + std::to_string(m));
        for (int64_t c = 0; c < C; ++c)
          expect_binomial(tgt[c], tgt_want[c], tgt_var[c], "targets of class " + std::to_string(c));
      }
      // Difficulty tracks the margin: every margin appears, and p*(majority) falls as it shrinks.
      for (int64_t m = 1; m <= K; ++m) ASSERT_GT(n_margin[m], B / (2 * K)) << m;
      for (int64_t m = 1; m < K; ++m)
        EXPECT_LT(mean_p[m] / n_margin[m], mean_p[m + 1] / n_margin[m + 1]) << m;
      EXPECT_LT(mean_p[1] / n_margin[1], 0.8);
      EXPECT_GT(mean_p[K] / n_margin[K], 0.95);
    }
  }
}

TEST(Difficulty, SplitsAreSeparateSeedStreams) {
  DifficultyTask task{TaskConfig()};
  const int64_t B = 8, T = 30;
  std::vector<torch::Tensor> train;
  for (uint64_t s = 0; s < 200; ++s) train.push_back(task.sample(B, T, s).input);
  for (uint64_t s = 0; s < 200; ++s) {
    const auto v = task.sample_split(B, T, s, Split::valid).input;
    const auto t = task.sample_split(B, T, s, Split::test).input;
    EXPECT_FALSE(v.equal(t));
    for (const auto& x : train) ASSERT_FALSE(v.equal(x) || t.equal(x)) << "seed " << s;
    ASSERT_TRUE(v.equal(task.sample_split(B, T, s, Split::valid).input)) << "deterministic";
  }
  EXPECT_TRUE(task.sample(B, T, 5).input.equal(task.sample_split(B, T, 5, Split::train).input));
}

TEST(Difficulty, ContractAndOptions) {
  DifficultyTask task{TaskConfig()};
  seqlab::testing::check_task_contract(task, 40);
  for (int64_t bad : {1, 33}) {
    TaskConfig c;
    c.vocab = bad;
    EXPECT_THROW(DifficultyTask{c}, Error);
  }
  TaskConfig c;
  c.task = "difficulty";
  c.max_len = 13;
  EXPECT_THROW(make_task(c), Error) << "3C + 5 = 14 tokens at least";
  c.max_len = 14;
  EXPECT_EQ(make_task(c)->n_classes(), 3);
}
