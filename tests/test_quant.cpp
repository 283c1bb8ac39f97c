// The reference weight conversions of core/quant.h: int8 blocks of 32 (error bound, tails, zero
// blocks, idempotence) and bf16 rounding.
#include "seqlab/core/quant.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace seqlab;

namespace {

std::vector<float> randn(int64_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

}  // namespace

TEST(Quant, WeightFormatNames) {
  for (auto f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::int8})
    EXPECT_EQ(parse_weight_format(weight_format_name(f)), f);
  EXPECT_THROW(parse_weight_format("q4"), Error);
  EXPECT_EQ(weight_bytes(WeightFormat::int8, 2, 40), 2 * 40 + 2 * 2 * 4);
  EXPECT_EQ(weight_bytes(WeightFormat::bf16, 3, 5), 30);
}

// Each weight is within half a step of its block's scale; the largest of a block is exact.
TEST(Quant, Q8ErrorIsHalfAStepWithTailBlocks) {
  const int64_t out = 7, in = 77;  // 77 = 2 full blocks + a tail of 13
  const auto w = randn(out * in, 1);
  std::vector<int8_t> q(out * in);
  std::vector<float> s(out * q8_blocks(in)), back(out * in);
  ASSERT_EQ(q8_blocks(in), 3);
  quantize_q8(w.data(), out, in, q.data(), s.data());
  dequantize_q8(q.data(), s.data(), out, in, back.data());
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < 3; ++j) {
      float amax = 0.f;
      for (int64_t c = 32 * j; c < std::min<int64_t>(in, 32 * j + 32); ++c) {
        amax = std::max(amax, std::fabs(w[r * in + c]));
        EXPECT_LE(std::fabs(back[r * in + c] - w[r * in + c]), 0.5f * s[r * 3 + j] * 1.0001f);
        EXPECT_LE(std::abs(int{q[r * in + c]}), 127);
      }
      EXPECT_FLOAT_EQ(s[r * 3 + j], amax / 127.f);
    }
}

// A dequantized matrix quantizes back to the same integers (a stored int8 model read through
// fp32 gives the fast decoder the weights it was written with); zero blocks stay zero.
TEST(Quant, Q8IsIdempotentAndZeroBlocksAreZero) {
  const int64_t out = 64, in = 96;
  auto w = randn(out * in, 2, 0.02f);
  for (int64_t c = 32; c < 64; ++c) w[5 * in + c] = 0.f;
  std::vector<int8_t> q(out * in), q2(out * in);
  std::vector<float> s(out * 3), s2(out * 3), back(out * in);
  quantize_q8(w.data(), out, in, q.data(), s.data());
  EXPECT_EQ(s[5 * 3 + 1], 0.f);
  dequantize_q8(q.data(), s.data(), out, in, back.data());
  quantize_q8(back.data(), out, in, q2.data(), s2.data());
  EXPECT_EQ(q, q2);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s2[i], s[i], 1e-6f * s[i]);
}

TEST(Quant, Q8RefusesNonFinite) {
  std::vector<float> w(32, 1.f);
  w[3] = std::numeric_limits<float>::infinity();
  std::vector<int8_t> q(32);
  float s;
  EXPECT_THROW(quantize_q8(w.data(), 1, 32, q.data(), &s), Error);
}

TEST(Quant, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.f)), 1.f);
  EXPECT_EQ(float_to_bf16(1.f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties go to the even one, 1.
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.f + std::ldexp(1.f, -8))), 1.f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.f + 3 * std::ldexp(1.f, -8))), 1.f + std::ldexp(1.f, -6));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(bf16_to_float(float_to_bf16(std::numeric_limits<float>::infinity()))));
  for (float x : randn(1000, 3))
    EXPECT_LE(std::fabs(bf16_to_float(float_to_bf16(x)) - x), std::fabs(x) * std::ldexp(1.f, -8));
}
