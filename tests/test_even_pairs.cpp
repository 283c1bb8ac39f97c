#include "seqlab/tasks/even_pairs.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> even_pairs() {
  TaskConfig c;
  c.task = "even_pairs";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  return make_task(c);
}
}  // namespace

TEST(EvenPairs, LabelsCountAbAndBaPairs) {
  auto t = even_pairs();
  EXPECT_EQ(t->head(), "tag");
  EXPECT_EQ(t->n_classes(), 2);
  for (int64_t T : {3, 4, 9, 30}) {
    auto b = t->sample(32, T, 100 + T);
    for (int64_t i = 0; i < 32; ++i) {
      auto r = parse_seq2seq_row(b, i, 2);
      ASSERT_EQ(static_cast<int64_t>(r.x.size()), T - 2);
      ASSERT_EQ(r.y.size(), 1u);
      EXPECT_TRUE(r.scored[0]);
      EXPECT_EQ(r.n_pad, 0);
      int64_t pairs = 0;  // occurrences of the substrings "ab" and "ba"
      for (size_t j = 0; j + 1 < r.x.size(); ++j)
        pairs += (r.x[j] == 0 && r.x[j + 1] == 1) + (r.x[j] == 1 && r.x[j + 1] == 0);
      EXPECT_EQ(r.y[0], pairs % 2 == 0 ? 1 : 0) << "T " << T << " row " << i;
    }
  }
}

TEST(EvenPairs, LabelsAreBalanced) {
  auto b = even_pairs()->sample(4000, 22, 3);
  const double even =
      b.target.index({torch::indexing::Slice(), -1}).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(even, 0.5, 0.03);
}

TEST(EvenPairs, Contract) {
  auto t = even_pairs();
  EXPECT_EQ(t->min_length(), 3);
  EXPECT_EQ(t->vocab_size(), 5);
  seqlab::testing::check_task_contract(*t, 17);
}
