// Internal to infer/: the AVX2 + FMA (and scalar) loops that infer/kernels.cpp dispatches to
// (kernels_avx2.cpp). Callers outside infer/kernels*.cpp use kernels.h.
#pragma once

#include "seqlab/core/simd_avx2.h"

#include <immintrin.h>

#include <atomic>
#include <cstdint>

namespace seqlab::infer::detail {

using seqlab::simd::exp256;
using seqlab::simd::hsum256;

// set_vecmat_narrow(): vecmat_avx2 takes the register-blocked path for heads of 8..64 columns
// (the tests compare both paths).
extern std::atomic<bool> g_vecmat_narrow;

// The fp32 dot products of weight row w with N inputs x[0..N) (N = 1..3), summed as matvec_avx2
// sums every row: four accumulators per input over 32 columns a step, the leftover whole groups
// of 8 columns into accumulators 0, 1, 2 in turn, combined as (a0 + a1) + (a2 + a3), hsum256,
// then the last cols % 8 columns one by one. One row at a time (not several interleaved) because
// this machine's prefetchers stream one row far faster: 20-22 GB/s against 13 GB/s for four rows
// read together (a 92 MB model's matrices, one core). Each weight vector is loaded once for the
// N inputs, so the batched tiles use the same code and stay bitwise matvec_avx2's.
template <int N>
__attribute__((target("avx2,fma"), always_inline)) inline void row_dots(const float* w,
                                                                        const float* const* x,
                                                                        int64_t cols, float* out) {
  __m256 acc[N][4];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) acc[i][k] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256 wv = _mm256_loadu_ps(w + c + 8 * k);
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i)
        acc[i][k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[i] + c + 8 * k), acc[i][k]);
    }
  }
  for (int k = 0; c + 8 <= cols; c += 8, ++k) {
    const __m256 wv = _mm256_loadu_ps(w + c);
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i)
      acc[i][k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[i] + c), acc[i][k]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    float s = hsum256(
        _mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), _mm256_add_ps(acc[i][2], acc[i][3])));
    for (int64_t t = c; t < cols; ++t) s += w[t] * x[i][t];
    out[i] = s;
  }
}
constexpr int kRowDotsInputs = 3;

// The batched step's product (kernels_batch.cpp): Y[i * ldy + r] = bias[r] + sum_c W[r, c] X[i, c]
// for n input rows X [n, cols] and `rows` weight rows: blocks of weight rows kept in L1 across
// all inputs, each row read once for up to 3 inputs (row_dots: 12 accumulators), so the results
// are bitwise matvec_avx2's on the same rows; cols must be a multiple of 8.
__attribute__((target("avx2,fma"))) void matmul_tiles_avx2(const float* W, const float* bias,
                                                           const float* X, float* Y, int64_t n,
                                                           int64_t rows, int64_t cols, int64_t ldy);
// Its scalar twin: tiles of 4 weight rows x 4 inputs, each pair summed in column order, bitwise
// matvec_scalar's.
void matmul_tiles_scalar(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                         int64_t rows, int64_t cols, int64_t ldy);
void matvec_scalar(const float* W, const float* bias, const float* x, float* y, int64_t rows,
                   int64_t cols);
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n);
__attribute__((target("avx2,fma"))) void matvec_avx2(const float* W, const float* bias,
                                                     const float* x, float* y, int64_t rows,
                                                     int64_t cols);
__attribute__((target("avx2,fma"))) void axpy_avx2(float a, const float* x, float* y, int64_t n);
__attribute__((target("avx2,fma"))) void gelu_avx2(float* x, int64_t n);
__attribute__((target("avx2,fma"))) void gelu_tanh_avx2(float* x, int64_t n);
__attribute__((target("avx2,fma"))) void layer_norm_avx2(const float* x, const float* gamma,
                                                         const float* beta, float* y, int64_t n,
                                                         double eps);
__attribute__((target("avx2,fma"))) void rms_norm_avx2(const float* x, const float* gamma, float* y,
                                                       int64_t n, double eps);
__attribute__((target("avx2,fma"))) void silu_mul_avx2(const float* g, const float* u, float* out,
                                                       int64_t n);
__attribute__((target("avx2,fma"))) void rope_rotate_avx2(float* x, const float* cos,
                                                          const float* sin, int64_t half);
__attribute__((target("avx2,fma"))) void softmax_avx2(float* x, int64_t n);
__attribute__((target("avx2,fma"))) float scan_channel_avx2(const float* a, float dl, float du,
                                                            const float* B, const float* C,
                                                            float* h, int64_t N);
__attribute__((target("avx2,fma"))) void vecmat_avx2(const float* M, const float* p, float* y,
                                                     int64_t rows, int64_t cols);

}  // namespace seqlab::infer::detail
