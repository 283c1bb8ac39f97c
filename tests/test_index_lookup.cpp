#include "seqlab/tasks/index_lookup.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(IndexLookup, TargetsRecomputedIndependently) {
  TaskConfig c;
  c.vocab = 5;
  c.max_len = 30;
  IndexLookupTask t{c};
  EXPECT_EQ(t.vocab_size(), 5 + 1 + 28);
  EXPECT_EQ(t.n_classes(), 5);
  for (int64_t T : {3, 4, 17, 30}) {
    auto b = t.sample(64, T, 13);
    ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{64, T}));
    auto in = b.input.accessor<int64_t, 2>();
    auto tg = b.target.accessor<int64_t, 2>();
    auto mk = b.mask.accessor<bool, 2>();
    for (int64_t i = 0; i < 64; ++i) {
      for (int64_t j = 0; j < T - 2; ++j) ASSERT_TRUE(in[i][j] >= 0 && in[i][j] < 5);
      ASSERT_EQ(in[i][T - 2], 5) << "separator";
      const int64_t q = in[i][T - 1] - 6;  // the index token's position
      ASSERT_TRUE(q >= 0 && q < T - 2) << "index token " << in[i][T - 1] << " at T=" << T;
      ASSERT_EQ(tg[i][T - 1], in[i][q]) << "sequence " << i;
      for (int64_t j = 0; j < T; ++j) ASSERT_EQ(mk[i][j], j == T - 1);
    }
  }
}

TEST(IndexLookup, DeterministicPerSeedAndIndicesSpread) {
  IndexLookupTask t{TaskConfig()};
  EXPECT_TRUE(t.sample(4, 20, 3).input.equal(t.sample(4, 20, 3).input));
  EXPECT_FALSE(t.sample(4, 20, 3).input.equal(t.sample(4, 20, 4).input));
  // Every position gets queried, the first and the last included.
  auto b = t.sample(512, 12, 1);
  auto q = b.input.select(1, 11) - 17;  // default vocab 16: IDX_p = 17 + p
  EXPECT_EQ(q.min().item<int64_t>(), 0);
  EXPECT_EQ(q.max().item<int64_t>(), 9);
  EXPECT_EQ(std::get<0>(at::_unique(q)).numel(), 10);
}

TEST(IndexLookup, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.vocab = 1;
  EXPECT_THROW(IndexLookupTask{c}, Error);
  c.vocab = 4;
  c.max_len = 2;
  EXPECT_THROW(IndexLookupTask{c}, Error);
  c.max_len = 10;
  IndexLookupTask t{c};
  EXPECT_NO_THROW(t.sample(2, 10, 0));
  EXPECT_THROW(t.sample(2, 11, 0), Error);  // would need an index token for position 8
  EXPECT_THROW(t.sample(2, 2, 0), Error);
}
