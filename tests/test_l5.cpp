#include "seqlab/tasks/l5.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace seqlab;

TEST(L5, LabelsRecomputedIndependently) {
  L5Task t{TaskConfig()};
  const int64_t B = 32, T = 57;
  auto b = t.sample(B, T, 11);
  ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
  ASSERT_EQ(b.target.sizes(), (std::vector<int64_t>{B, T}));
  EXPECT_TRUE(b.mask.all().item<bool>());
  auto in = b.input.accessor<int64_t, 2>();
  auto tg = b.target.accessor<int64_t, 2>();
  for (int64_t i = 0; i < B; ++i) {
    int64_t na = 0, nb = 0;
    for (int64_t j = 0; j < T; ++j) {
      ASSERT_TRUE(in[i][j] == 0 || in[i][j] == 1);
      (in[i][j] == 0 ? na : nb) += 1;
      const int64_t want = std::abs(na - nb) < 5 ? 1 : 0;
      ASSERT_EQ(tg[i][j], want) << "sequence " << i << " position " << j;
    }
  }
}

TEST(L5, DeterministicPerSeed) {
  L5Task t{TaskConfig()};
  EXPECT_TRUE(t.sample(4, 30, 3).input.equal(t.sample(4, 30, 3).input));
  EXPECT_FALSE(t.sample(4, 30, 3).input.equal(t.sample(4, 30, 4).input));
}

TEST(L5, BothLabelsCommonAtShortAndLongLengths) {
  L5Task t{TaskConfig()};
  for (int64_t T : {20, 64, 256}) {
    auto b = t.sample(128, T, 5);
    // The first 5 positions are always inside the band; measure the rest.
    const double ones = b.target.slice(1, 5).to(torch::kDouble).mean().item<double>();
    EXPECT_GT(ones, 0.3) << "T=" << T;
    EXPECT_LT(ones, 0.7) << "T=" << T;
  }
}

TEST(L5, WalksReturnFromFarOutside) {
  // Hardness: a counter clipped at a small bound cannot tell when a walk that went far re-enters
  // the band, so such returns must occur.
  L5Task t{TaskConfig()};
  auto b = t.sample(64, 128, 9);
  auto in = b.input.accessor<int64_t, 2>();
  int64_t returns = 0;
  for (int64_t i = 0; i < 64; ++i) {
    int64_t d = 0, peak = 0;
    bool returned = false;
    for (int64_t j = 0; j < 128; ++j) {
      d += in[i][j] == 0 ? 1 : -1;
      peak = std::max(peak, std::abs(d));
      if (peak >= 12 && std::abs(d) < 5) returned = true;
    }
    returns += returned;
  }
  EXPECT_GE(returns, 8) << "walks that reached |d| >= 12 and came back inside the band";
}

TEST(L5, RejectsEmptyBatches) {
  L5Task t{TaskConfig()};
  EXPECT_THROW(t.sample(4, 0, 1), Error);
  EXPECT_THROW(t.sample(0, 4, 1), Error);
}
