// Internal to infer/: the AVX2 + FMA (and scalar) loops that infer/kernels.cpp dispatches to
// (kernels_avx2.cpp). Callers outside infer/kernels*.cpp use kernels.h.
#pragma once

#include <atomic>
#include <cstdint>

namespace seqlab::infer::detail {

// set_vecmat_narrow(): vecmat_avx2 takes the register-blocked path for heads of 8..64 columns
// (the tests compare both paths).
extern std::atomic<bool> g_vecmat_narrow;

void matvec_scalar(const float* W, const float* bias, const float* x, float* y, int64_t rows,
                   int64_t cols);
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n);
__attribute__((target("avx2,fma"))) void matmul4_pairs_avx2(const float* W, const float* bias,
                                                            const float* const* x, float* const* y,
                                                            int64_t rows, int64_t cols);
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
