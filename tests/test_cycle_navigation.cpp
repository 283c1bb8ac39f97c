#include "seqlab/tasks/cycle_navigation.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <set>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {
std::unique_ptr<Task> cycle(int64_t modulus) {
  TaskConfig c;
  c.task = "cycle_navigation";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  c.modulus = modulus;
  return make_task(c);
}
}  // namespace

TEST(CycleNavigation, FinalStateReSimulated) {
  for (int64_t m : {5, 2, 7}) {
    auto t = cycle(m);
    EXPECT_EQ(t->n_classes(), m);
    std::set<int64_t> seen;
    for (int64_t T : {3, 12, 41}) {
      auto b = t->sample(64, T, m * 100 + T);
      for (int64_t i = 0; i < 64; ++i) {
        auto r = parse_seq2seq_row(b, i, 3);
        ASSERT_EQ(static_cast<int64_t>(r.x.size()), T - 2);
        ASSERT_EQ(r.y.size(), 1u);
        EXPECT_TRUE(r.scored[0]);
        int64_t pos = 0;  // walk the cycle one action at a time: 0 left, 1 stay, 2 right
        for (auto a : r.x) {
          if (a == 0) pos = pos == 0 ? m - 1 : pos - 1;
          if (a == 2) pos = pos == m - 1 ? 0 : pos + 1;
        }
        EXPECT_EQ(r.y[0], pos) << "m " << m << " T " << T << " row " << i;
        seen.insert(r.y[0]);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), m) << "every final state should occur";
  }
}

TEST(CycleNavigation, ActionsAreUniform) {
  auto x = cycle(5)->sample(200, 52, 9).input.narrow(1, 0, 50);
  for (int64_t a = 0; a < 3; ++a)
    EXPECT_NEAR(x.eq(a).to(torch::kDouble).mean().item<double>(), 1.0 / 3, 0.02);
}

TEST(CycleNavigation, ImpossibleModulusThrows) {
  EXPECT_THROW(cycle(1), Error);
  EXPECT_THROW(cycle(0), Error);
  EXPECT_THROW(cycle(-3), Error);
}

TEST(CycleNavigation, Contract) {
  auto t = cycle(5);
  EXPECT_EQ(t->min_length(), 3);
  EXPECT_EQ(t->vocab_size(), 6);
  seqlab::testing::check_task_contract(*t, 20);
}
