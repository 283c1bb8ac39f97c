#include "seqlab/tasks/anbn_prefix.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

// Brute force: is x_0..x_j exactly a^n b^n for some n >= 1?
bool is_anbn(const std::vector<int64_t>& s, int64_t j) {
  const int64_t len = j + 1;
  if (len % 2 != 0) return false;
  for (int64_t p = 0; p < len; ++p)
    if (s[p] != (p < len / 2 ? 0 : 1)) return false;
  return true;
}

std::vector<int64_t> row(const torch::Tensor& t, int64_t i) {
  auto r = t[i].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

}  // namespace

TEST(AnbnPrefix, LabelsRecomputedIndependently) {
  AnbnPrefixTask t{TaskConfig()};
  for (int64_t T : {2, 3, 7, 30}) {
    auto b = t.sample(64, T, 21);
    ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{64, T}));
    EXPECT_TRUE(b.mask.all().item<bool>());
    for (int64_t i = 0; i < 64; ++i) {
      auto s = row(b.input, i);
      auto tg = row(b.target, i);
      bool seen = false;
      for (int64_t j = 0; j < T; ++j) {
        ASSERT_TRUE(s[j] == 0 || s[j] == 1);
        seen = seen || is_anbn(s, j);
        ASSERT_EQ(tg[j], seen ? 1 : 0) << "T=" << T << " sequence " << i << " position " << j;
      }
    }
  }
}

TEST(AnbnPrefix, DeterministicPerSeed) {
  AnbnPrefixTask t{TaskConfig()};
  EXPECT_TRUE(t.sample(8, 20, 3).input.equal(t.sample(8, 20, 3).input));
  EXPECT_FALSE(t.sample(8, 20, 3).input.equal(t.sample(8, 20, 4).input));
}

TEST(AnbnPrefix, MixOfPositivesAndNearMisses) {
  AnbnPrefixTask t{TaskConfig()};
  const int64_t B = 600, T = 40;
  auto b = t.sample(B, T, 8);
  int64_t pos = 0, near = 0, one_short = 0;
  for (int64_t i = 0; i < B; ++i) {
    auto s = row(b.input, i);
    if (row(b.target, i)[T - 1] == 1) {
      ++pos;
      continue;
    }
    // A hard negative starts with a^k b^m, 1 <= m < k: identical to a positive until the b's stop.
    int64_t k = 0, m = 0;
    while (k < T && s[k] == 0) ++k;
    while (k + m < T && s[k + m] == 1) ++m;
    if (k >= 2 && m >= 1 && m < k) ++near;
    if (k >= 2 && m == k - 1) ++one_short;
  }
  EXPECT_NEAR(pos / double(B), 2.0 / 3.0, 0.06);
  EXPECT_GE(near, (B - pos) * 6 / 10) << "of " << B - pos << " negatives";
  EXPECT_GE(one_short, (B - pos) / 4) << "of " << B - pos << " negatives";
  const double ones = b.target.to(torch::kDouble).mean().item<double>();
  EXPECT_GT(ones, 0.2);
  EXPECT_LT(ones, 0.5);
}

TEST(AnbnPrefix, ImpossibleLengthsThrow) {
  AnbnPrefixTask t{TaskConfig()};
  EXPECT_EQ(t.min_length(), 2);
  EXPECT_THROW(t.sample(4, 1, 1), Error);
  EXPECT_THROW(t.sample(0, 4, 1), Error);
}
