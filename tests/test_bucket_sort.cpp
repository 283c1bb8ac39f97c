#include "seqlab/tasks/bucket_sort.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> bucket_sort(int64_t vocab) {
  TaskConfig c;
  c.task = "bucket_sort";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  c.vocab = vocab;
  return make_task(c);
}
}  // namespace

TEST(BucketSort, OutputIsTheSortedInput) {
  for (int64_t vocab : {0, 2, 9}) {
    auto t = bucket_sort(vocab);
    const int64_t k = vocab == 0 ? 5 : vocab;
    EXPECT_EQ(t->n_classes(), k);
    EXPECT_EQ(t->vocab_size(), k + 3);
    for (int64_t T : {3, 4, 26, 27}) {
      auto b = t->sample(16, T, T + vocab);
      const int64_t n = (T - 1) / 2;
      for (int64_t i = 0; i < 16; ++i) {
        auto r = parse_seq2seq_row(b, i, k);
        ASSERT_EQ(static_cast<int64_t>(r.x.size()), n) << "T " << T;
        EXPECT_EQ(r.n_pad, (T - 1) % 2);
        auto want = r.x;
        std::sort(want.begin(), want.end());
        EXPECT_EQ(r.y, want) << "k " << k << " T " << T << " row " << i;
        EXPECT_TRUE(std::all_of(r.scored.begin(), r.scored.end(), [](bool s) { return s; }));
      }
    }
  }
}

TEST(BucketSort, EverySymbolIsDrawn) {
  auto x = bucket_sort(0)->sample(200, 81, 5).input.narrow(1, 0, 40);
  for (int64_t s = 0; s < 5; ++s)
    EXPECT_NEAR(x.eq(s).to(torch::kDouble).mean().item<double>(), 0.2, 0.02);
}

TEST(BucketSort, ImpossibleVocabThrows) {
  EXPECT_THROW(bucket_sort(1), Error);
  EXPECT_THROW(bucket_sort(-2), Error);
}

TEST(BucketSort, Contract) {
  auto t = bucket_sort(0);
  EXPECT_EQ(t->min_length(), 3);
  seqlab::testing::check_task_contract(*t, 19);
}
