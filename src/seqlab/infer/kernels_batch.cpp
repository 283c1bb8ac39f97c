// The batched step's matrix-matrix product (internal: kernels_avx2.h declares it, kernels.cpp's
// matmul_rows_blocked dispatches to it): each weight vector, once loaded, serves up to 3 input
// rows (row_dots), and cache blocks of weight rows serve every input, so that a step of B
// sequences reads the weights from memory once instead of B times. Unlike prefill's packed GEMM
// (kernels.cpp) they need no repacking, so they pay from 2 rows on, and every output is summed in
// matvec's order (bitwise its result), which keeps a batched sequence's tokens equal to its solo
// run's.
#include "seqlab/infer/kernels_avx2.h"

#include <algorithm>

namespace seqlab::infer::detail {

namespace {

// Weight rows per cache block: about 24 KiB of weights (L1) reused by every input, at least 1.
int64_t block_rows(int64_t cols) {
  return std::max<int64_t>(1, 6144 / cols);
}

using TileFn = void (*)(const float*, const float* const*, int64_t, float*);
constexpr TileFn kTiles[kRowDotsInputs + 1] = {nullptr, row_dots<1>, row_dots<2>, row_dots<3>};

}  // namespace

__attribute__((target("avx2,fma"))) void matmul_tiles_avx2(const float* W, const float* bias,
                                                           const float* X, float* Y, int64_t n,
                                                           int64_t rows, int64_t cols,
                                                           int64_t ldy) {
  const int64_t blk = block_rows(cols);
  const float* x[kRowDotsInputs];
  float out[kRowDotsInputs];
  for (int64_t r0 = 0; r0 < rows; r0 += blk) {
    const int64_t r1 = std::min(rows, r0 + blk);
    for (int64_t i = 0; i < n; i += kRowDotsInputs) {
      const int m = static_cast<int>(std::min<int64_t>(kRowDotsInputs, n - i));
      for (int k = 0; k < m; ++k) x[k] = X + (i + k) * cols;
      for (int64_t r = r0; r < r1; ++r) {
        kTiles[m](W + r * cols, x, cols, out);
        for (int k = 0; k < m; ++k) Y[(i + k) * ldy + r] = out[k] + (bias ? bias[r] : 0.0f);
      }
    }
  }
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
