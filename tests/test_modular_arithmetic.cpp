#include "seqlab/tasks/modular_arithmetic.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

#include <set>

using namespace seqlab;
using seqlab::testing::parse_seq2seq_row;

namespace {

std::unique_ptr<Task> modular(int64_t modulus) {
  TaskConfig c;
  c.task = "modular_arithmetic";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  c.modulus = modulus;
  return make_task(c);
}

// A separate evaluator: Dijkstra's shunting-yard with an operand and an operator stack, x above
// + and -, all left-associative. Tokens: digits < m, + = m, - = m+1, x = m+2.
int64_t shunting_yard(const std::vector<int64_t>& tokens, int64_t m) {
  std::vector<int64_t> values, ops;
  auto precedence = [&](int64_t op) { return op == m + 2 ? 2 : 1; };
  auto reduce = [&] {
    const int64_t rhs = values.back();
    values.pop_back();
    const int64_t lhs = values.back();
    values.pop_back();
    const int64_t op = ops.back();
    ops.pop_back();
    int64_t v = op == m ? lhs + rhs : op == m + 1 ? lhs - rhs : lhs * rhs;
    values.push_back(((v % m) + m) % m);
  };
  for (auto tok : tokens) {
    if (tok < m) {
      values.push_back(tok);
      continue;
    }
    while (!ops.empty() && precedence(ops.back()) >= precedence(tok)) reduce();
    ops.push_back(tok);
  }
  while (!ops.empty()) reduce();
  EXPECT_EQ(values.size(), 1u);
  return values.back();
}

}  // namespace

TEST(ModularArithmetic, ReferenceEvaluatorOnHandExamples) {
  // Deletang et al.'s examples mod 5, then one that tells precedence from left-to-right.
  EXPECT_EQ(shunting_yard({1, 5, 2, 7, 3}, 5), 2);              // 1 + 2 x 3
  EXPECT_EQ(shunting_yard({1, 6, 1, 6, 1}, 5), 4);              // 1 - 1 - 1
  EXPECT_EQ(shunting_yard({0, 7, 1, 5, 4, 7, 3, 6, 2}, 5), 0);  // 0 x 1 + 4 x 3 - 2
  EXPECT_EQ(shunting_yard({2, 8, 3, 9, 4}, 7), 4);              // 2 - 3 x 4 mod 7
}

TEST(ModularArithmetic, ValuesReEvaluated) {
  for (int64_t m : {5, 2, 11}) {
    auto t = modular(m);
    EXPECT_EQ(t->n_classes(), m);
    std::set<int64_t> seen;
    for (int64_t T : {3, 4, 5, 10, 11, 33}) {
      auto b = t->sample(64, T, m * 1000 + T);
      const int64_t n = (T - 2) % 2 == 1 ? T - 2 : T - 3;
      for (int64_t i = 0; i < 64; ++i) {
        auto r = parse_seq2seq_row(b, i, m + 3);
        ASSERT_EQ(static_cast<int64_t>(r.x.size()), n) << "T " << T;
        EXPECT_EQ(r.n_pad, T - 2 - n);
        ASSERT_EQ(r.y.size(), 1u);
        EXPECT_TRUE(r.scored[0]);
        for (int64_t j = 0; j < n; ++j)
          EXPECT_EQ(r.x[j] < m, j % 2 == 0) << "digits and operators must alternate";
        EXPECT_EQ(r.y[0], shunting_yard(r.x, m)) << "m " << m << " T " << T << " row " << i;
        seen.insert(r.y[0]);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), m) << "every value should occur";
  }
}

TEST(ModularArithmetic, ImpossibleModulusThrows) {
  EXPECT_THROW(modular(1), Error);
  EXPECT_THROW(modular(0), Error);
  EXPECT_THROW(modular(70000), Error);
}

TEST(ModularArithmetic, Contract) {
  auto t = modular(5);
  EXPECT_EQ(t->min_length(), 3);
  EXPECT_EQ(t->vocab_size(), 11);
  seqlab::testing::check_task_contract(*t, 21);
}
