#include "seqlab/tasks/nearest_neighbor.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

// Brute force over the raw tokens: label of the nearest point, -1 when the nearest is not unique.
int64_t nearest_label(const std::vector<int64_t>& x, int64_t k, int64_t Q) {
  const int64_t qu = x[3 * k + 1], qv = x[3 * k + 2];
  std::vector<int64_t> d(k);
  for (int64_t j = 0; j < k; ++j)
    d[j] = (x[3 * j] - qu) * (x[3 * j] - qu) + (x[3 * j + 1] - qv) * (x[3 * j + 1] - qv);
  const int64_t best = *std::min_element(d.begin(), d.end());
  int64_t count = 0, label = -1;
  for (int64_t j = 0; j < k; ++j)
    if (d[j] == best) {
      ++count;
      label = x[3 * j + 2] - Q;
    }
  return count == 1 ? label : -1;
}

}  // namespace

TEST(NearestNeighbor, TargetsRecomputedByScanningAllPoints) {
  for (int64_t Q : {3, 16}) {
    TaskConfig c;
    c.vocab = Q;
    c.max_len = 26;
    NearestNeighborTask t{c};
    EXPECT_EQ(t.vocab_size(), Q + 6);
    for (int64_t T : {9, 10, 11, 26}) {
      const int64_t B = 300, k = (T - 3) / 3, at = 3 * k + 2;
      auto b = t.sample(B, T, 23);
      ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
      auto in = b.input.accessor<int64_t, 2>();
      auto tg = b.target.accessor<int64_t, 2>();
      auto mk = b.mask.accessor<bool, 2>();
      std::vector<int64_t> counts(4, 0);
      int64_t exact_hits = 0;
      for (int64_t i = 0; i < B; ++i) {
        std::vector<int64_t> x(T);
        for (int64_t j = 0; j < T; ++j) x[j] = in[i][j];
        for (int64_t j = 0; j < k; ++j) {
          ASSERT_TRUE(x[3 * j] < Q && x[3 * j + 1] < Q);
          ASSERT_TRUE(x[3 * j + 2] >= Q && x[3 * j + 2] < Q + 4);
          for (int64_t l = 0; l < j; ++l)
            ASSERT_FALSE(x[3 * j] == x[3 * l] && x[3 * j + 1] == x[3 * l + 1]) << "distinct points";
        }
        ASSERT_EQ(x[3 * k], Q + 4) << "query marker";
        ASSERT_TRUE(x[3 * k + 1] < Q && x[3 * k + 2] < Q);
        for (int64_t j = at + 1; j < T; ++j) ASSERT_EQ(x[j], Q + 5) << "trailing PAD";
        const int64_t want = nearest_label(x, k, Q);
        ASSERT_GE(want, 0) << "the nearest point must be unique; sequence " << i;
        ASSERT_EQ(tg[i][at], want) << "Q=" << Q << " T=" << T << " sequence " << i;
        for (int64_t j = 0; j < T; ++j) ASSERT_EQ(mk[i][j], j == at);
        counts[want] += 1;
        for (int64_t j = 0; j < k; ++j)
          exact_hits += x[3 * j] == x[3 * k + 1] && x[3 * j + 1] == x[3 * k + 2];
      }
      for (int64_t c4 : counts) EXPECT_GT(c4, B / 8) << "labels roughly uniform";
      if (Q == 16) {
        EXPECT_LT(exact_hits, B / 4) << "the query is rarely one of the points";
      }
    }
  }
}

TEST(NearestNeighbor, DeterministicPerSeed) {
  NearestNeighborTask t{TaskConfig()};
  EXPECT_TRUE(t.sample(4, 21, 3).input.equal(t.sample(4, 21, 3).input));
  EXPECT_FALSE(t.sample(4, 21, 3).input.equal(t.sample(4, 21, 4).input));
}

TEST(NearestNeighbor, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.vocab = 1;
  EXPECT_THROW(NearestNeighborTask{c}, Error);
  c.vocab = 2;
  c.max_len = 18;  // 5 points at the longest training length
  EXPECT_THROW(NearestNeighborTask{c}, Error);
  c.max_len = 15;
  NearestNeighborTask t{c};
  EXPECT_NO_THROW(t.sample(4, 15, 0));      // 4 points fill the 2x2 grid
  EXPECT_THROW(t.sample(4, 18, 0), Error);  // 5 distinct points do not fit
  EXPECT_THROW(t.sample(4, 8, 0), Error);
}
