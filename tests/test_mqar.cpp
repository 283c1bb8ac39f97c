#include "seqlab/tasks/mqar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace seqlab;

namespace {

// Checks every query by scanning back for its key; returns the number of queries checked.
int64_t verify(const MqarTask& t, int64_t B, int64_t T, int64_t P, uint64_t seed) {
  auto b = t.sample(B, T, seed);
  EXPECT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
  auto in = b.input.accessor<int64_t, 2>();
  auto tg = b.target.accessor<int64_t, 2>();
  auto mk = b.mask.accessor<bool, 2>();
  const int64_t K = t.n_keys();
  int64_t checked = 0;
  for (int64_t i = 0; i < B; ++i) {
    std::map<int64_t, int64_t> asked;
    for (int64_t j = 0; j < T; ++j) {
      const bool is_query = j >= 2 * P;
      EXPECT_EQ(mk[i][j], is_query) << "T=" << T << " position " << j;
      if (!is_query) {
        // Pairs: keys in [0, K), values in [K, V), keys distinct.
        if (j % 2 == 0) {
          EXPECT_LT(in[i][j], K);
          for (int64_t l = 0; l < j; l += 2) EXPECT_NE(in[i][l], in[i][j]) << "distinct keys";
        } else {
          EXPECT_GE(in[i][j], K);
          EXPECT_LT(in[i][j], t.vocab_size());
        }
        continue;
      }
      // Scan back for the key among the pairs.
      int64_t found = -1;
      for (int64_t l = 2 * P - 2; l >= 0; l -= 2)
        if (in[i][l] == in[i][j]) found = in[i][l + 1] - K;
      EXPECT_GE(found, 0) << "query " << in[i][j] << " at " << j << " was never paired";
      EXPECT_EQ(tg[i][j], found) << "T=" << T << " sequence " << i << " position " << j;
      asked[in[i][j]] += 1;
      ++checked;
    }
    // Shuffled rounds: no key is asked about twice before every key was asked once.
    int64_t lo = T, hi = 0;
    for (const auto& [key, n] : asked) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    if (T - 2 * P >= P) {
      EXPECT_EQ(static_cast<int64_t>(asked.size()), P);
    }
    EXPECT_LE(hi - lo, 1);
  }
  return checked;
}

}  // namespace

TEST(Mqar, ValuesFoundByScanningBack) {
  TaskConfig c;
  c.vocab = 40;
  MqarTask derived{c};
  EXPECT_EQ(derived.n_classes(), 20);
  for (int64_t T : {3, 4, 5, 16, 60})
    EXPECT_EQ(verify(derived, 32, T, T / 3, 7), 32 * (T - 2 * (T / 3)));
  c.n_pairs = 5;
  MqarTask fixed{c};
  EXPECT_EQ(fixed.min_length(), 11);
  for (int64_t T : {11, 12, 40}) EXPECT_EQ(verify(fixed, 32, T, 5, 9), 32 * (T - 10));
}

TEST(Mqar, DeterministicPerSeedAndValuesSpread) {
  MqarTask t{TaskConfig()};
  EXPECT_TRUE(t.sample(4, 30, 3).input.equal(t.sample(4, 30, 3).input));
  EXPECT_FALSE(t.sample(4, 30, 3).input.equal(t.sample(4, 30, 4).input));
  auto b = t.sample(64, 30, 5);
  auto values = b.target.masked_select(b.mask);
  EXPECT_GT(std::get<0>(at::_unique(values)).numel(), 100) << "of 128 value classes";
}

TEST(Mqar, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.vocab = 3;
  EXPECT_THROW(MqarTask{c}, Error);
  c.vocab = 20;
  c.n_pairs = 11;  // 10 keys only
  EXPECT_THROW(MqarTask{c}, Error);
  c.n_pairs = -1;
  EXPECT_THROW(MqarTask{c}, Error);
  c.n_pairs = 10;
  MqarTask fixed{c};
  EXPECT_THROW(fixed.sample(2, 20, 0), Error);  // 10 pairs need T >= 21
  EXPECT_NO_THROW(fixed.sample(2, 21, 0));
  c.n_pairs = 0;
  c.max_len = 33;  // 11 pairs at the longest training length, 10 keys
  EXPECT_THROW(MqarTask{c}, Error);
  c.max_len = 32;
  MqarTask derived{c};
  EXPECT_NO_THROW(derived.sample(2, 32, 0));      // 10 pairs
  EXPECT_THROW(derived.sample(2, 33, 0), Error);  // 11 pairs, 10 keys
  EXPECT_THROW(derived.sample(2, 2, 0), Error);
}

// Exact values from docs/results/recall-full/value_guess.py's sum over partitions (fractions), and
// P = 2, V = 2 by hand: both values equal with probability 1/2, so (1/2 * 2 + 1/2 * 1) / 2.
TEST(MqarValueGuess, MatchesTheExactSumOverPartitions) {
  EXPECT_DOUBLE_EQ(mqar_value_guess(2, 2), 0.75);
  EXPECT_NEAR(mqar_value_guess(3, 5), 13.0 / 25, 1e-12);
  EXPECT_NEAR(mqar_value_guess(4, 128), 548641.0 / 2097152, 1e-12);
  EXPECT_NEAR(mqar_value_guess(8, 64), 758170530811.0 / 4398046511104, 1e-12);
  EXPECT_NEAR(mqar_value_guess(8, 128), 84678739645739.0 / 562949953421312, 1e-12);
  EXPECT_NEAR(mqar_value_guess(16, 128), 0.1035059919670298, 1e-12);
  EXPECT_DOUBLE_EQ(mqar_value_guess(1, 7), 1.0);
  EXPECT_THROW(mqar_value_guess(0, 8), Error);
}

// The guess played on the task's own strings: answer each query with the string's most frequent
// value (first on a tie, which scores the same in expectation) and compare with the formula.
TEST(MqarValueGuess, MatchesTheGuessPlayedOnSampledStrings) {
  TaskConfig c;
  for (int64_t P : {4, 16, 32}) {
    c.n_pairs = P;
    MqarTask t{c};
    const int64_t B = 4000, T = 4 * P, K = t.n_keys();
    auto b = t.sample(B, T, 11);
    auto in = b.input.accessor<int64_t, 2>();
    auto tg = b.target.accessor<int64_t, 2>();
    auto mk = b.mask.accessor<bool, 2>();
    double right = 0, queries = 0;
    for (int64_t i = 0; i < B; ++i) {
      std::map<int64_t, int64_t> count;
      for (int64_t j = 1; j < 2 * P; j += 2) count[in[i][j] - K] += 1;
      const auto best = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
      for (int64_t j = 2 * P; j < T; ++j)
        if (mk[i][j]) {
          right += tg[i][j] == best;
          queries += 1;
        }
    }
    const double want = mqar_value_guess(P, t.n_classes()), got = right / queries;
    // Strings are independent; queries within a string are not, so the error is per string.
    const double se = std::sqrt(want * (1 - want) / static_cast<double>(B));
    EXPECT_NEAR(got, want, 4 * se) << "P=" << P;
  }
}
