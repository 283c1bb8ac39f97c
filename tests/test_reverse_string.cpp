#include "seqlab/tasks/reverse_string.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> reverse_string() {
  TaskConfig c;
  c.task = "reverse_string";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  return make_task(c);
}
}  // namespace

TEST(ReverseString, OutputIsTheReversedInput) {
  auto t = reverse_string();
  for (int64_t T : {3, 4, 5, 20, 21}) {
    auto b = t->sample(16, T, T);
    const int64_t n = (T - 1) / 2;
    for (int64_t i = 0; i < 16; ++i) {
      auto r = parse_seq2seq_row(b, i, 2);
      ASSERT_EQ(static_cast<int64_t>(r.x.size()), n) << "T " << T;
      EXPECT_EQ(r.n_pad, (T - 1) % 2);
      auto want = r.x;
      std::reverse(want.begin(), want.end());
      EXPECT_EQ(r.y, want) << "T " << T << " row " << i;
      EXPECT_TRUE(std::all_of(r.scored.begin(), r.scored.end(), [](bool s) { return s; }));
    }
  }
}

TEST(ReverseString, Contract) {
  auto t = reverse_string();
  EXPECT_EQ(t->min_length(), 3);
  EXPECT_EQ(t->vocab_size(), 5);
  EXPECT_EQ(t->n_classes(), 2);
  seqlab::testing::check_task_contract(*t, 15);
}
