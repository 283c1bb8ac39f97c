#include "seqlab/tasks/parity.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(Parity, LabelsRecomputedIndependently) {
  ParityTask t{TaskConfig()};
  auto b = t.sample(16, 23, 7);
  ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{16, 23}));
  auto in = b.input.accessor<int64_t, 2>();
  auto tg = b.target.accessor<int64_t, 2>();
  for (int64_t i = 0; i < 16; ++i) {
    int parity = 0;
    for (int64_t j = 0; j < 23; ++j) {
      ASSERT_TRUE(in[i][j] == 0 || in[i][j] == 1);
      parity ^= static_cast<int>(in[i][j]);
      ASSERT_EQ(tg[i][j], parity) << "sequence " << i << " position " << j;
    }
  }
  EXPECT_TRUE(b.mask.all().item<bool>());
}

TEST(Parity, DeterministicPerSeed) {
  ParityTask t{TaskConfig()};
  EXPECT_TRUE(t.sample(4, 10, 3).input.equal(t.sample(4, 10, 3).input));
  EXPECT_FALSE(t.sample(4, 10, 3).input.equal(t.sample(4, 10, 4).input));
}

TEST(Parity, BitsAreBalanced) {
  ParityTask t{TaskConfig()};
  const double mean = t.sample(64, 64, 1).input.to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(mean, 0.5, 0.03);
}

TEST(TaskLoss, OnlyMaskedPositionsCount) {
  Batch b;
  b.target = torch::tensor({{0, 1}}, torch::kLong);
  b.mask = torch::tensor({{true, false}});
  // Right at position 0, badly wrong at the masked position 1.
  auto logits = torch::tensor({{{5.0f, -5.0f}, {5.0f, -5.0f}}});
  EXPECT_LT(task_loss(logits, b).item<double>(), 1e-3);
  ParityTask t{TaskConfig()};
  auto s = t.score(logits, b);
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.accuracy, 1.0);
}
