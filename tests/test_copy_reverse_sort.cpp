#include "seqlab/tasks/copy_reverse_sort.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> crs(int64_t vocab) {
  TaskConfig c;
  c.task = "copy_reverse_sort";
  c.min_len = 10;
  c.vocab = vocab;
  return make_task(c);
}
}  // namespace

TEST(CopyReverseSort, OutputFollowsTheTaskToken) {
  for (int64_t vocab : {0, 3}) {
    auto t = crs(vocab);
    const int64_t k = vocab == 0 ? 8 : vocab;
    EXPECT_EQ(t->n_classes(), k);
    EXPECT_EQ(t->vocab_size(), k + 3 + 3);
    for (int64_t T : {4, 5, 30, 31}) {
      auto b = t->sample(32, T, T + vocab);
      auto tasks = dynamic_cast<const CopyReverseSortTask&>(*t).task_of(b.input);
      const int64_t m = (T - 2) / 2;
      for (int64_t i = 0; i < 32; ++i) {
        auto r = parse_seq2seq_row(b, i, k + 3);
        ASSERT_EQ(static_cast<int64_t>(r.x.size()), m + 1) << "T " << T;
        EXPECT_EQ(r.n_pad, (T - 2) % 2);
        const int64_t task = r.x[0] - k;  // recomputed from the raw first token
        ASSERT_TRUE(task >= 0 && task < 3) << "first token " << r.x[0];
        EXPECT_EQ(tasks[i].item<int64_t>(), task);
        std::vector<int64_t> x(r.x.begin() + 1, r.x.end()), want = x;
        for (auto s : x) EXPECT_TRUE(s >= 0 && s < k);
        if (task == 1) std::reverse(want.begin(), want.end());
        if (task == 2) std::sort(want.begin(), want.end());
        EXPECT_EQ(r.y, want) << "task " << task << " T " << T << " row " << i;
        EXPECT_TRUE(std::all_of(r.scored.begin(), r.scored.end(), [](bool s) { return s; }));
      }
    }
  }
}

TEST(CopyReverseSort, TasksAreUniform) {
  auto t = crs(0);
  auto b = t->sample(3000, 12, 1);
  auto tasks = dynamic_cast<const CopyReverseSortTask&>(*t).task_of(b.input);
  for (int64_t k = 0; k < 3; ++k)
    EXPECT_NEAR(tasks.eq(k).to(torch::kDouble).mean().item<double>(), 1.0 / 3, 0.03);
}

TEST(CopyReverseSort, ContractAndErrors) {
  auto t = crs(0);
  EXPECT_EQ(t->min_length(), 4);
  seqlab::testing::check_task_contract(*t, 20);
  EXPECT_THROW(crs(1), Error);
}
