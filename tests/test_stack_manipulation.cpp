#include "seqlab/tasks/stack_manipulation.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> stack_manipulation() {
  TaskConfig c;
  c.task = "stack_manipulation";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  return make_task(c);
}
}  // namespace

TEST(StackManipulation, FinalStackReplayed) {
  // Input tokens: a = 0, b = 1, POP = 2, PUSH a = 3, PUSH b = 4. Output: a, b, EMPTY = 2.
  auto t = stack_manipulation();
  int64_t ended_empty = 0, ended_long = 0;
  for (int64_t T : {6, 7, 8, 30, 61}) {
    auto b = t->sample(64, T, T);
    const int64_t n = (T - 2) / 2;
    for (int64_t i = 0; i < 64; ++i) {
      auto r = parse_seq2seq_row(b, i, 5);
      ASSERT_EQ(static_cast<int64_t>(r.x.size()), n) << "T " << T;
      ASSERT_EQ(static_cast<int64_t>(r.y.size()), n + 1);
      EXPECT_EQ(r.n_pad, (T - 2) % 2);
      size_t s = 0;  // the initial stack is the leading run of symbols, then only actions
      while (s < r.x.size() && r.x[s] < 2) ++s;
      EXPECT_GE(s, 1u) << "no initial stack";
      EXPECT_LT(s, r.x.size()) << "no action";
      std::vector<int64_t> stack(r.x.begin(), r.x.begin() + s);
      for (size_t j = s; j < r.x.size(); ++j) {
        ASSERT_GE(r.x[j], 2) << "a stack symbol after the actions began";
        if (r.x[j] == 2 && !stack.empty()) stack.pop_back();
        if (r.x[j] == 3) stack.push_back(0);
        if (r.x[j] == 4) stack.push_back(1);
      }
      for (size_t j = 0; j < r.y.size(); ++j) {
        const int64_t want = j < stack.size() ? stack[stack.size() - 1 - j] : 2;
        EXPECT_EQ(r.y[j], want) << "T " << T << " row " << i << " slot " << j;
        EXPECT_EQ(r.scored[j], j <= stack.size()) << "scored through the first EMPTY only";
      }
      ended_empty += stack.empty();
      ended_long += stack.size() >= static_cast<size_t>(n / 2);
    }
  }
  EXPECT_GT(ended_empty, 0);
  EXPECT_GT(ended_long, 0);
}

TEST(StackManipulation, Contract) {
  auto t = stack_manipulation();
  EXPECT_EQ(t->min_length(), 6);
  EXPECT_EQ(t->vocab_size(), 8);
  EXPECT_EQ(t->n_classes(), 3);
  seqlab::testing::check_task_contract(*t, 24);
}
