// The fast decoder's products on bf16 and int8 weights (issue 35; formats in core/quant.h).
//
// A QuantMatrix holds one [rows, cols] weight matrix with each row padded with zeros to `ld`, a
// multiple of 32 columns, so every kernel runs whole 32-column blocks:
//   bf16: the top 16 bits of each fp32 weight (float_to_bf16), widened back and multiplied in fp32;
//   int8: quantize_q8's integers and per-block scales. The input row is quantized the same way
//         (blocks of 32, scale max|x| / 127), each block's integer dot product is summed exactly in
//         32 bits (pairs in 16 bits: 2 * 127 * 127 fits), and the block adds
//         float(sum) * (w_scale * x_scale) to an fp32 accumulator: ggml's Q8_0 x Q8_0 scheme.
//
// Each format has an AVX2 kernel and a scalar twin that performs the same float operations in the
// same order (std::fma where AVX2 fuses), so they agree bitwise (tests/test_fast_quant.cpp). A
// batched product (n input rows) prepares each input row once (int8: quantized) and reads each
// block of weight rows once for all n inputs (int8: 4 rows; bf16: about 12 KiB of rows, each row
// against up to 3 inputs at once, every widened weight vector used for all of them). Each output's
// sum has the same operations in the same order whatever the batch, so a batched row is bitwise its
// solo step, with any number of threads (parallel_rows).
#pragma once

#include "seqlab/core/quant.h"

#include <cstdint>
#include <vector>

namespace seqlab::infer {

struct QuantMatrix {
  WeightFormat format = WeightFormat::f32;
  int64_t rows = 0, cols = 0, ld = 0;  // ld: padded row length (multiple of 32)
  std::vector<uint16_t> h;             // bf16 [rows, ld]
  std::vector<int8_t> q;               // int8 [rows, ld]
  std::vector<float> scales;           // int8: [rows, ld / 32]

  // From row-major fp32 W [rows, cols]; format bf16 or int8.
  QuantMatrix(const float* W, int64_t rows, int64_t cols, WeightFormat format);
  QuantMatrix() = default;
  int64_t bytes() const;  // the weights and scales the products read
};

// Y[i, r] = bias[r] + sum_c W[r, c] X[i, c] for n rows X [n, cols] -> Y [n, rows]; bias may be
// null. Scratch for the prepared inputs is per thread and grows to the largest n * cols seen.
void quant_matmul(const QuantMatrix& W, const float* bias, const float* X, float* Y, int64_t n);

namespace detail {
constexpr int kBf16TileInputs = 3;
// One dot product over `ld` columns (a multiple of 32), as the products use them.
float bf16_dot_scalar(const uint16_t* w, const float* x, int64_t ld);
// out[i] = the dot products of bf16 row w with x[i], i < N (1..kBf16TileInputs): each equals
// bf16_dot_avx2(w, x[i], ld) bitwise.
__attribute__((target("avx2,fma"))) void bf16_tile_avx2(const uint16_t* w, int64_t ld,
                                                        const float* const* x, int N, float* out);
float q8_dot_scalar(const int8_t* w, const float* ws, const int8_t* x, const float* xs, int64_t nb);
__attribute__((target("avx2,fma"))) float bf16_dot_avx2(const uint16_t* w, const float* x,
                                                        int64_t ld);
__attribute__((target("avx2,fma"))) float q8_dot_avx2(const int8_t* w, const float* ws,
                                                      const int8_t* x, const float* xs, int64_t nb);
// x [cols] -> q [ld] (zeros past cols) and scales [ld / 32], quantize_q8's rounding.
void q8_quantize_row(const float* x, int64_t cols, int64_t ld, int8_t* q, float* scales);
}  // namespace detail

}  // namespace seqlab::infer
