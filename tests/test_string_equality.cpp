#include "seqlab/tasks/string_equality.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(StringEquality, LabelsRecomputedIndependently) {
  for (int64_t V : {2, 4, 9}) {
    TaskConfig c;
    c.vocab = V;
    StringEqualityTask t{c};
    EXPECT_EQ(t.vocab_size(), V + 2);
    for (int64_t T : {3, 4, 11, 40}) {
      const int64_t B = 200;
      auto b = t.sample(B, T, 19);
      ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
      ASSERT_EQ(b.target.sizes(), (std::vector<int64_t>{B}));
      auto in = b.input.accessor<int64_t, 2>();
      auto tg = b.target.accessor<int64_t, 1>();
      int64_t equal = 0, one = 0, two = 0;
      for (int64_t i = 0; i < B; ++i) {
        // Find the separator; before it x, after it y; an even T starts with one PAD.
        int64_t sep = -1, start = 0;
        if (T % 2 == 0) {
          ASSERT_EQ(in[i][0], V + 1);
          start = 1;
        }
        for (int64_t j = start; j < T; ++j)
          if (in[i][j] == V) sep = j;
        const int64_t L = sep - start;
        ASSERT_EQ(T - 1 - sep, L) << "both halves have the same length";
        ASSERT_EQ(L, (T - 1) / 2);
        int64_t diff = 0;
        for (int64_t j = 0; j < L; ++j) {
          ASSERT_TRUE(in[i][start + j] < V && in[i][sep + 1 + j] < V);
          diff += in[i][start + j] != in[i][sep + 1 + j];
        }
        ASSERT_EQ(tg[i], diff == 0 ? 1 : 0) << "V=" << V << " T=" << T << " sequence " << i;
        equal += diff == 0;
        one += diff == 1;
        two += diff == 2;
        ASSERT_LE(diff, 2) << "negatives are near misses";
      }
      EXPECT_EQ(equal, B / 2);
      if ((T - 1) / 2 >= 2) {
        EXPECT_GE(two, B / 8) << "T=" << T;
        EXPECT_GE(one, B / 8) << "T=" << T;
      }
    }
  }
}

TEST(StringEquality, DeterministicPerSeed) {
  StringEqualityTask t{TaskConfig()};
  auto a = t.sample(8, 15, 3), b = t.sample(8, 15, 3), d = t.sample(8, 15, 4);
  EXPECT_TRUE(a.input.equal(b.input));
  EXPECT_TRUE(a.target.equal(b.target));
  EXPECT_FALSE(a.input.equal(d.input));
}

TEST(StringEquality, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.vocab = 1;
  EXPECT_THROW(StringEqualityTask{c}, Error);
  StringEqualityTask t{TaskConfig()};
  EXPECT_THROW(t.sample(4, 2, 0), Error);
  EXPECT_THROW(t.sample(0, 5, 0), Error);
}
