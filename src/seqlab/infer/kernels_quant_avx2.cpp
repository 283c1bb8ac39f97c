// The AVX2 loops of infer/kernels_quant.h. Their scalar twins (kernels_quant.cpp) repeat these
// operations lane by lane in the same order.
#include "seqlab/infer/kernels_avx2.h"
#include "seqlab/infer/kernels_quant.h"

#include <immintrin.h>

namespace seqlab::infer::detail {

namespace {

// R weight rows (w + r * ld, stored bf16) x N inputs: one accumulator per pair. Each 32-byte load
// holds 16 columns in bf16_slot's order, so unpacking it against zeros gives columns c..c+7 (low
// words) and c+8..c+15 (high words) as fp32; every accumulator takes them in column order, so each
// pair's sum is the same whatever R and N (a batched row is bitwise its solo step).
// One weight row (stored bf16) x N inputs, four accumulators per input: 32 columns a step, column
// group k (8 columns) widened once (the top 16 bits of an fp32) and multiplied into every input's
// accumulator k; each sum is combined as (a0 + a1) + (a2 + a3), then hsum256. Every input gets the
// same operations in the same order whatever N, so a batched row is bitwise its solo step.
template <int N>
__attribute__((target("avx2,fma"))) void bf16_tile(const uint16_t* w, int64_t ld,
                                                   const float* const* x, float* out) {
  __m256 acc[N][4];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) acc[i][k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < ld; c += 32) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + c + 8 * k));
      const __m256 wf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i)
        acc[i][k] = _mm256_fmadd_ps(wf, _mm256_loadu_ps(x[i] + c + 8 * k), acc[i][k]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i)
    out[i] = hsum256(
        _mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), _mm256_add_ps(acc[i][2], acc[i][3])));
}

using TileFn = void (*)(const uint16_t*, int64_t, const float* const*, float*);
constexpr TileFn kTile[kBf16TileInputs + 1] = {nullptr, bf16_tile<1>, bf16_tile<2>, bf16_tile<3>};

}  // namespace

__attribute__((target("avx2,fma"))) void bf16_tile_avx2(const uint16_t* w, int64_t ld,
                                                        const float* const* x, int N, float* out) {
  kTile[N](w, ld, x, out);
}

__attribute__((target("avx2,fma"))) float bf16_dot_avx2(const uint16_t* w, const float* x,
                                                        int64_t ld) {
  float out;
  bf16_tile<1>(w, ld, &x, &out);
  return out;
}

// Per block of 32: |w| times x with w's signs (maddubs: pairs summed in 16 bits), pairs of those
// summed in 32 bits (lane m holds columns 4m..4m+3), converted to fp32 and multiplied by the two
// scales into one accumulator.
__attribute__((target("avx2,fma"))) float q8_dot_avx2(const int8_t* w, const float* ws,
                                                      const int8_t* x, const float* xs,
                                                      int64_t nb) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t j = 0; j < nb; ++j) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * j));
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * j));
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
    const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
    acc = _mm256_fmadd_ps(p, _mm256_set1_ps(ws[j] * xs[j]), acc);
  }
  return hsum256(acc);
}

}  // namespace seqlab::infer::detail
