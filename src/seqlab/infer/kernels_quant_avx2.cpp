// The AVX2 dot products of infer/kernels_quant.h. Their scalar twins (kernels_quant.cpp) repeat
// these operations lane by lane in the same order.
#include "seqlab/infer/kernels_avx2.h"
#include "seqlab/infer/kernels_quant.h"

#include <immintrin.h>

namespace seqlab::infer::detail {

// Four accumulators of 8 lanes over 32 columns a step, combined as (a0 + a1) + (a2 + a3), then
// hsum256.
__attribute__((target("avx2,fma"))) float bf16_dot_avx2(const uint16_t* w, const float* x,
                                                        int64_t ld) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (int64_t c = 0; c < ld; c += 32)
    for (int k = 0; k < 4; ++k) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + c + 8 * k));
      const __m256 wf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      acc[k] = _mm256_fmadd_ps(wf, _mm256_loadu_ps(x + c + 8 * k), acc[k]);
    }
  return hsum256(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
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
