#include "seqlab/tasks/duplicate_string.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> duplicate_string() {
  TaskConfig c;
  c.task = "duplicate_string";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  return make_task(c);
}
}  // namespace

TEST(DuplicateString, OutputIsTheInputTwice) {
  auto t = duplicate_string();
  for (int64_t T : {4, 5, 6, 7, 31}) {
    auto b = t->sample(16, T, T);
    const int64_t n = (T - 1) / 3;
    for (int64_t i = 0; i < 16; ++i) {
      auto r = parse_seq2seq_row(b, i, 2);
      ASSERT_EQ(static_cast<int64_t>(r.x.size()), n) << "T " << T;
      EXPECT_EQ(r.n_pad, (T - 1) % 3);
      std::vector<int64_t> want;
      for (int rep = 0; rep < 2; ++rep) want.insert(want.end(), r.x.begin(), r.x.end());
      EXPECT_EQ(r.y, want) << "T " << T << " row " << i;
      EXPECT_TRUE(std::all_of(r.scored.begin(), r.scored.end(), [](bool s) { return s; }));
    }
  }
}

TEST(DuplicateString, Contract) {
  auto t = duplicate_string();
  EXPECT_EQ(t->min_length(), 4);
  EXPECT_EQ(t->vocab_size(), 5);
  EXPECT_EQ(t->n_classes(), 2);
  seqlab::testing::check_task_contract(*t, 22);
}
