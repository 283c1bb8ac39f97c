// Internal to infer/: the AVX2 + FMA (and scalar) loops that infer/kernels.cpp dispatches to
// (kernels_avx2.cpp). Callers outside infer/kernels*.cpp use kernels.h.
#pragma once

#include <immintrin.h>

#include <atomic>
#include <cstdint>

namespace seqlab::infer::detail {

// set_vecmat_narrow(): vecmat_avx2 takes the register-blocked path for heads of 8..64 columns
// (the tests compare both paths).
extern std::atomic<bool> g_vecmat_narrow;

// The sum of v's 8 lanes (the order every AVX2 dot product here finishes with).
__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

// The batched step's product (kernels_batch.cpp): Y[i * ldy + r] = bias[r] + sum_c W[r, c] X[i, c]
// for n input rows X [n, cols] and `rows` weight rows. Register tiles of 2 weight rows x 6 inputs
// (12 accumulators), each weight vector loaded once for 6 inputs, blocks of weight rows kept in L1
// across all inputs. Every (weight row, input) pair has one accumulator summed over the columns in
// order, so the results are bitwise matvec_avx2's on the same rows (rows past the last multiple
// of 4 through dot_avx2, as there); cols must be a multiple of 8.
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
__attribute__((target("avx2,fma"))) void vecmat_avx2(const float* M, const float* p, float* y,
                                                     int64_t rows, int64_t cols);

}  // namespace seqlab::infer::detail
