#include "seqlab/tasks/flip_flop.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::rows;

namespace {

std::unique_ptr<Task> flip_flop(const std::string& name) {
  TaskConfig c;
  c.task = name;
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  return make_task(c);
}

// Tokens: w = 0, r = 1, i = 2, bits 3 and 4.
constexpr int64_t kW = 0, kR = 1, kI = 2;

}  // namespace

TEST(FlipFlop, ReadBitsRecomputedByScanningBack) {
  for (const char* name : {"flip_flop", "flip_flop_dense", "flip_flop_sparse"}) {
    auto t = flip_flop(name);
    EXPECT_EQ(t->head(), "lm");
    EXPECT_EQ(t->vocab_size(), 5);
    for (int64_t T : {3, 4, 5, 64, 129}) {
      auto b = t->sample(32, T, T);
      const auto in = rows(b.input), tg = rows(b.target), mk = rows(b.mask);
      for (int64_t i = 0; i < 32; ++i) {
        SCOPED_TRACE(::testing::Message() << name << " T " << T << " row " << i);
        const auto &x = in[i], &g = tg[i], &m = mk[i];
        EXPECT_EQ(x[0], kW) << "the first instruction writes";
        const int64_t last_op = 2 * ((T + 1) / 2 - 1);
        EXPECT_EQ(x[last_op], kR) << "the last instruction reads";
        for (int64_t t2 = 0; t2 < T; ++t2) {
          const bool op = x[t2] == kW || x[t2] == kR || x[t2] == kI;
          EXPECT_EQ(op, t2 % 2 == 0) << "instructions and bits alternate, t " << t2;
          EXPECT_TRUE(op || x[t2] == 3 || x[t2] == 4);
          EXPECT_EQ(m[t2] != 0, x[t2] == kR) << "t " << t2;
          if (t2 + 1 < T) {
            EXPECT_EQ(g[t2], x[t2 + 1]) << "lm target at t " << t2;
          }
          if (x[t2] != kR) continue;
          int64_t w = t2 - 2;  // scan back to the last write
          while (w >= 0 && x[w] != kW) w -= 2;
          ASSERT_GE(w, 0) << "a read before any write";
          EXPECT_EQ(g[t2], x[w + 1]) << "read at t " << t2;
        }
      }
    }
  }
}

TEST(FlipFlop, InstructionFrequenciesMatchTheVariant) {
  const std::vector<std::pair<std::string, double>> variants = {
      {"flip_flop", 0.8}, {"flip_flop_dense", 0.1}, {"flip_flop_sparse", 0.98}};
  for (const auto& [name, p_ignore] : variants) {
    // Instructions strictly between the fixed first write and final read.
    auto ops = flip_flop(name)->sample(64, 512, 21).input.narrow(1, 2, 508).slice(1, 0, 508, 2);
    auto freq = [&](int64_t tok) { return ops.eq(tok).to(torch::kDouble).mean().item<double>(); };
    EXPECT_NEAR(freq(kI), p_ignore, 0.015) << name;
    EXPECT_NEAR(freq(kW), (1 - p_ignore) / 2, 0.015) << name;
    EXPECT_NEAR(freq(kR), (1 - p_ignore) / 2, 0.015) << name;
  }
}

TEST(FlipFlop, WrittenBitsAreBalanced) {
  auto x = flip_flop("flip_flop_dense")->sample(64, 256, 4).input;
  auto bits = x.slice(1, 1, 256, 2).masked_select(x.slice(1, 0, 256, 2).eq(kW));
  EXPECT_NEAR(bits.eq(4).to(torch::kDouble).mean().item<double>(), 0.5, 0.03);
}

TEST(FlipFlop, ImpossibleProbabilityThrows) {
  EXPECT_THROW(FlipFlopTask("x", 1.0), Error);
  EXPECT_THROW(FlipFlopTask("x", -0.1), Error);
}

TEST(FlipFlop, Contract) {
  for (const char* name : {"flip_flop", "flip_flop_dense", "flip_flop_sparse"}) {
    auto t = flip_flop(name);
    EXPECT_EQ(t->name(), name);
    EXPECT_EQ(t->min_length(), 3);
    seqlab::testing::check_task_contract(*t, 40);
  }
}
