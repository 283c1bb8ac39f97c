// The batched step's matrix-matrix product (internal: kernels_avx2.h declares it, kernels.cpp's
// matmul_rows_blocked dispatches to it): register-blocked micro-kernels that use each weight
// vector, once loaded, for several input rows, so that a step of B sequences reads the weights once
// instead of B times. Unlike prefill's packed GEMM (kernels.cpp) they need no repacking, so they
// pay from 2 rows on, and every output is summed in matvec's order (bitwise its result), which
// keeps a batched sequence's tokens equal to its solo run's.
#include "seqlab/infer/kernels_avx2.h"

#include <algorithm>

namespace seqlab::infer::detail {

namespace {

// Weight rows per cache block: about 24 KiB of weights (L1) reused by every input, even (the tile's
// 2 rows), at least 2.
int64_t block_rows(int64_t cols) {
  return std::max<int64_t>(2, (6144 / cols) / 2 * 2);
}

// One tile: weight rows r, r+1 against N inputs x[0..N), 2N accumulators; each pair sums its
// columns in order in one vector accumulator, then hsum256, then the bias: matvec_avx2's order.
template <int N>
__attribute__((target("avx2,fma"))) inline void tile_2xn(const float* W, const float* bias,
                                                         const float* const* x, float* const* y,
                                                         int64_t r, int64_t cols) {
  const float *w0 = W + r * cols, *w1 = w0 + cols;
  __m256 a0[N], a1[N];
#pragma GCC unroll 6
  for (int i = 0; i < N; ++i) a0[i] = a1[i] = _mm256_setzero_ps();
  for (int64_t c = 0; c < cols; c += 8) {
    const __m256 v0 = _mm256_loadu_ps(w0 + c), v1 = _mm256_loadu_ps(w1 + c);
#pragma GCC unroll 6
    for (int i = 0; i < N; ++i) {
      const __m256 xv = _mm256_loadu_ps(x[i] + c);
      a0[i] = _mm256_fmadd_ps(v0, xv, a0[i]);
      a1[i] = _mm256_fmadd_ps(v1, xv, a1[i]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < N; ++i) {
    y[i][r] = hsum256(a0[i]) + (bias ? bias[r] : 0.0f);
    y[i][r + 1] = hsum256(a1[i]) + (bias ? bias[r + 1] : 0.0f);
  }
}

// Rows [r0, r1) (an even count) against the N inputs x.
template <int N>
__attribute__((target("avx2,fma"))) void tiles_2xn(const float* W, const float* bias,
                                                   const float* const* x, float* const* y,
                                                   int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; r += 2) tile_2xn<N>(W, bias, x, y, r, cols);
}

constexpr int kTileInputs = 6;
using TilesFn = void (*)(const float*, const float*, const float* const*, float* const*, int64_t,
                         int64_t, int64_t);
// kTiles[m]: the tiles for a group of m inputs (the last group of a batch may be short).
constexpr TilesFn kTiles[kTileInputs + 1] = {nullptr,      tiles_2xn<1>, tiles_2xn<2>, tiles_2xn<3>,
                                             tiles_2xn<4>, tiles_2xn<5>, tiles_2xn<6>};

}  // namespace

__attribute__((target("avx2,fma"))) void matmul_tiles_avx2(const float* W, const float* bias,
                                                           const float* X, float* Y, int64_t n,
                                                           int64_t rows, int64_t cols,
                                                           int64_t ldy) {
  const int64_t rows4 = rows - rows % 4, blk = block_rows(cols);
  const float* x[kTileInputs];
  float* y[kTileInputs];
  for (int64_t r0 = 0; r0 < rows4; r0 += blk) {
    const int64_t r1 = std::min(rows4, r0 + blk);
    for (int64_t i = 0; i < n; i += kTileInputs) {
      const int64_t m = std::min<int64_t>(kTileInputs, n - i);
      for (int64_t k = 0; k < m; ++k) {
        x[k] = X + (i + k) * cols;
        y[k] = Y + (i + k) * ldy;
      }
      kTiles[m](W, bias, x, y, r0, r1, cols);
    }
  }
  // matvec_avx2 computes the rows past the last multiple of 4 with dot_avx2.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = rows4; r < rows; ++r)
      Y[i * ldy + r] = dot_avx2(W + r * cols, X + i * cols, cols) + (bias ? bias[r] : 0.0f);
}

void matmul_tiles_scalar(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                         int64_t rows, int64_t cols, int64_t ldy) {
  constexpr int64_t kR = 4, kN = 4;
  const int64_t blk = std::max<int64_t>(kR, block_rows(cols) / kR * kR);
  for (int64_t r0 = 0; r0 < rows; r0 += blk) {
    const int64_t r1 = std::min(rows, r0 + blk);
    for (int64_t i0 = 0; i0 < n; i0 += kN) {
      const int64_t ni = std::min(kN, n - i0);
      for (int64_t r = r0; r < r1; r += kR) {
        const int64_t nr = std::min(kR, r1 - r);
        float s[kR][kN] = {};
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t a = 0; a < nr; ++a)
            for (int64_t b = 0; b < ni; ++b)
              s[a][b] += W[(r + a) * cols + c] * X[(i0 + b) * cols + c];
        for (int64_t a = 0; a < nr; ++a)
          for (int64_t b = 0; b < ni; ++b)
            Y[(i0 + b) * ldy + r + a] = s[a][b] + (bias ? bias[r + a] : 0.0f);
      }
    }
  }
}

}  // namespace seqlab::infer::detail
