// The fast decoder's arithmetic: plain fp32 loops over contiguous buffers, no LibTorch, no heap.
//
// Matrix-vector products have two implementations, chosen once at run time: AVX2 + FMA (8 floats
// per instruction, one weight row at a time in four accumulators) on CPUs that have it, and a
// portable scalar twin that any compiler vectorises as it can. set_kernel() forces one (the tests
// compare them).
#pragma once

#include <cstdint>

namespace seqlab::infer {

enum class Kernel { automatic, scalar, avx2 };

// Forces the implementation (automatic = AVX2 + FMA when the CPU has it). Returns the one in use.
Kernel set_kernel(Kernel k);
Kernel active_kernel();
bool cpu_has_avx2_fma();
const char* kernel_name(Kernel k);

// Threads over output rows (optional, default 1 = the caller only). With n > 1, matvec and
// matmul_rows_blocked calls of at least kParallelWork multiply-adds split their weight rows into n
// contiguous parts, one per thread of a persistent pool; each row is computed by the same code
// whatever the split, so results are bitwise equal to one thread. Pool workers spin (yielding) for
// a short while between jobs, then sleep until the next, so keep n at most the number of idle
// cores; set_threads(1) stops them.
constexpr int64_t kParallelWork = 1 << 15;
void set_threads(int n);
int threads();

// Runs fn(ctx, r0, r1) over contiguous ranges of `rows` weight rows that cover them all (starts at
// multiples of 4): split among set_threads()'s pool when `work` (multiply-adds) is at least
// kParallelWork and rows >= 8, else one call fn(ctx, 0, rows) on the caller. The products of the
// other weight formats (infer/kernels_quant.h) split their rows with it.
using RowsFn = void (*)(const void* ctx, int64_t r0, int64_t r1);
void parallel_rows(RowsFn fn, const void* ctx, int64_t rows, int64_t work);

// y[r] = bias[r] + sum_c W[r, c] x[c]; W row-major [rows, cols]; bias may be null.
void matvec(const float* W, const float* bias, const float* x, float* y, int64_t rows,
            int64_t cols);
// Y[i, r] = bias[r] + sum_c W[r, c] X[i, c] for n rows of X [n, cols] -> Y [n, rows]
// (prefill). With AVX2, one thread and n >= 4: a GEMM on 16-row panels of W packed transposed,
// 4 x 16 register tiles (1.3-1.7x the per-row path at 256-1024 wide layers, n = 64); otherwise one
// matvec per input row in cache blocks of 8 rows x 64 outputs (bitwise matvec's).
// set_prefill_tiled(false) forces the per-row path (`seqlab bench decode --engines
// fast,fast-rows` compares them).
void matmul_rows(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                 int64_t rows, int64_t cols);
void set_prefill_tiled(bool on);
// The same product for a batch of rows (the server's batched step, infer/fast_model.h step_batch),
// bitwise matvec's results row by row: register-tiled kernels (AVX2: 1 weight row x 3 inputs in
// 12 accumulators; scalar twin: 4 x 4) that read each block of weights once for all n inputs, with
// no repacking (matmul_rows' packed GEMM repacks W on every call, which pays for prefill's 64-row
// chunks but not here: measured 10x slower at 4 rows). With set_threads(n > 1) and at least
// kParallelWork multiply-adds, the weight rows are split among the threads (one synchronisation per
// product), bitwise the same results.
void matmul_rows_blocked(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                         int64_t rows, int64_t cols);
bool prefill_tiled();
float dot(const float* a, const float* b, int64_t n);
// y[c] = sum_r p[r] M[r, c]; M row-major [rows, cols] (attention: weights times values). With
// AVX2 and cols = 8..64 in steps of 8 (a head's width), one pass over M with every column's
// accumulator in a register; bitwise the general loop's result (set_vecmat_narrow(false) forces
// the general loop, for the tests).
void vecmat(const float* M, const float* p, float* y, int64_t rows, int64_t cols);
void set_vecmat_narrow(bool on);
// y += a * x
void axpy(float a, const float* x, float* y, int64_t n);

// LayerNorm over n values (eps 1e-5 by default, as torch::nn::LayerNorm's; a model's norm_eps
// otherwise). With AVX2 the mean and variance are summed in fp32 lanes, the scalar twin sums in
// double.
void layer_norm(const float* x, const float* gamma, const float* beta, float* y, int64_t n,
                double eps = 1e-5);
// RMSNorm over n values (model/norm.h, Hugging Face's LlamaRMSNorm): y = gamma * (x * inv),
// inv = 1 / sqrt(mean(x^2) + eps) in fp32. With AVX2 the squares are summed in fp32 lanes, the
// scalar twin sums in double.
void rms_norm(const float* x, const float* gamma, float* y, int64_t n, double eps);
// SwiGLU's gate: out[i] = silu(g[i]) * u[i], silu(a) = a / (1 + exp(-a)); out may be g (in
// place) or any buffer that ends before g's elements it has not read yet. With AVX2 exp is exp256
// (relative error < 2e-7); the scalar twin calls std::exp. Both are tested against float64.
void silu_mul(const float* g, const float* u, float* out, int64_t n);
// GELU, exact (erf) and its tanh approximation (GPT-2's gelu_new). With AVX2, 8 lanes at a time:
// erf by a polynomial (absolute error < 1.5e-7), tanh through exp; the scalar twin calls std::erf
// / std::tanh. Both are tested against float64.
void gelu(float* x, int64_t n);
void gelu_tanh(float* x, int64_t n);
// RoPE's rotate-half on one head, in place: x1 = x[0:half], x2 = x[half:2 half] ->
// x1 cos - x2 sin, x2 cos + x1 sin, with cos, sin [half] (infer/fast_rope.h). With AVX2, 8 pairs at
// a time (the compiler may fuse a product into the sum: within an ulp of the scalar twin).
void rope_rotate(float* x, const float* cos, const float* sin, int64_t half);
// One channel of Mamba's selective scan (infer/mixers/mamba.cpp): h[n] = exp(dl a[n]) h[n] +
// du B[n] for n < N, returns sum_n h[n] C[n]. With AVX2, 8 states at a time (exp by exp256,
// relative error < 2e-7; the sum in 8 lanes, then across them); the scalar twin calls std::exp and
// sums in order. Both are tested against float64.
float scan_channel(const float* a, float dl, float du, const float* B, const float* C, float* h,
                   int64_t N);
// In-place softmax over n values.
void softmax(float* x, int64_t n);

}  // namespace seqlab::infer
