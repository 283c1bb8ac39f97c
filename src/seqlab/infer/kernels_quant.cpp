#include "seqlab/infer/kernels_quant.h"

#include "seqlab/core/error.h"
#include "seqlab/infer/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace seqlab::infer {

using namespace detail;

QuantMatrix::QuantMatrix(const float* W, int64_t rows_, int64_t cols_, WeightFormat format_)
    : format(format_), rows(rows_), cols(cols_), ld(q8_blocks(cols_) * kQ8Block) {
  SEQLAB_CHECK(format != WeightFormat::f32, "QuantMatrix holds bf16 or int8 weights");
  if (format == WeightFormat::bf16) {
    h.assign(rows * ld, 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) h[r * ld + c] = float_to_bf16(W[r * cols + c]);
    return;
  }
  const int64_t nb = ld / kQ8Block;
  std::vector<int8_t> packed(rows * cols);
  scales.assign(rows * nb, 0.f);
  quantize_q8(W, rows, cols, packed.data(), scales.data());
  q.assign(rows * ld, 0);
  for (int64_t r = 0; r < rows; ++r)
    std::copy(packed.begin() + r * cols, packed.begin() + (r + 1) * cols, q.begin() + r * ld);
}

int64_t QuantMatrix::bytes() const {
  return static_cast<int64_t>(h.size() * 2 + q.size() + scales.size() * 4);
}

namespace detail {

namespace {
// hsum256's order on 8 lanes: (l0 + l1) + (l2 + l3) with l_k = v[k] + v[k + 4].
float hsum8(const float* v) {
  const float l0 = v[0] + v[4], l1 = v[1] + v[5], l2 = v[2] + v[6], l3 = v[3] + v[7];
  return (l0 + l1) + (l2 + l3);
}
}  // namespace

float bf16_dot_scalar(const uint16_t* w, const float* x, int64_t ld) {
  float acc[4][8] = {};
  for (int64_t c = 0; c < ld; c += 32)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 8; ++l) {
        const int64_t i = c + 8 * k + l;
        acc[k][l] = std::fma(bf16_to_float(w[i]), x[i], acc[k][l]);
      }
  float v[8];
  for (int l = 0; l < 8; ++l) v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
  return hsum8(v);
}

float q8_dot_scalar(const int8_t* w, const float* ws, const int8_t* x, const float* xs,
                    int64_t nb) {
  float acc[8] = {};
  for (int64_t j = 0; j < nb; ++j) {
    const float d = ws[j] * xs[j];
    for (int m = 0; m < 8; ++m) {
      int32_t s = 0;
      for (int e = 4 * m; e < 4 * m + 4; ++e) s += int32_t{w[32 * j + e]} * int32_t{x[32 * j + e]};
      acc[m] = std::fma(static_cast<float>(s), d, acc[m]);
    }
  }
  return hsum8(acc);
}

void q8_quantize_row(const float* x, int64_t cols, int64_t ld, int8_t* q, float* scales) {
  for (int64_t c0 = 0; c0 < ld; c0 += kQ8Block) {
    const int64_t c1 = std::min(cols, c0 + kQ8Block);
    float amax = 0.f;
    for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[c]));
    float scale = amax / 127.f;
    // A non-finite input has no int8 value: the block's scale becomes NaN, so the outputs it
    // reaches are NaN, as the fp32 product's would be.
    const bool finite = std::isfinite(scale);
    if (!finite) scale = std::numeric_limits<float>::quiet_NaN();
    scales[c0 / kQ8Block] = scale;
    for (int64_t c = c0; c < c0 + kQ8Block; ++c) {
      float v = 0.f;
      if (c < c1 && finite && scale != 0.f) v = std::clamp(std::round(x[c] / scale), -127.f, 127.f);
      q[c] = static_cast<int8_t>(v);
    }
  }
}

}  // namespace detail

namespace {

struct Job {
  const QuantMatrix* W;
  const float *bias, *xp, *xs;  // xp: bf16's padded inputs [n, ld]; xs: int8's scales [n, ld/32]
  const int8_t* xq;             // int8's quantized inputs [n, ld]
  float* Y;
  int64_t n;
  bool avx2;
};

// One output: bias + the dot product of weight row r with input i (the scalar twins, and int8).
float dot_one(const Job& j, int64_t r, int64_t i) {
  const QuantMatrix& W = *j.W;
  const int64_t ld = W.ld, nb = ld / kQ8Block;
  float d;
  if (W.format == WeightFormat::int8) {
    const int8_t *w = W.q.data() + r * ld, *x = j.xq + i * ld;
    const float *ws = W.scales.data() + r * nb, *xs = j.xs + i * nb;
    d = j.avx2 ? q8_dot_avx2(w, ws, x, xs, nb) : q8_dot_scalar(w, ws, x, xs, nb);
  } else {
    d = bf16_dot_scalar(W.h.data() + r * ld, j.xp + i * ld, ld);
  }
  return j.bias ? d + j.bias[r] : d;
}

// bf16 with AVX2, rows [r0, r1) in cache blocks of about 12 KiB of weight rows, each row read
// against up to kBf16TileInputs inputs at once.
void bf16_rows_avx2(const Job& j, int64_t r0, int64_t r1) {
  const QuantMatrix& W = *j.W;
  const int64_t ld = W.ld, blk = std::max<int64_t>(1, 6144 / ld);
  const float* x[kBf16TileInputs];
  float out[kBf16TileInputs];
  for (int64_t b0 = r0; b0 < r1; b0 += blk) {
    const int64_t b1 = std::min(r1, b0 + blk);
    for (int64_t i0 = 0; i0 < j.n; i0 += kBf16TileInputs) {
      const int N = static_cast<int>(std::min<int64_t>(kBf16TileInputs, j.n - i0));
      for (int k = 0; k < N; ++k) x[k] = j.xp + (i0 + k) * ld;
      for (int64_t r = b0; r < b1; ++r) {
        bf16_tile_avx2(W.h.data() + r * ld, ld, x, N, out);
        for (int k = 0; k < N; ++k)
          j.Y[(i0 + k) * W.rows + r] = j.bias ? out[k] + j.bias[r] : out[k];
      }
    }
  }
}

// Weight rows [r0, r1): int8 and the scalar twins in blocks of 4 rows, each read once for all n
// inputs; bf16 with AVX2 in bf16_rows_avx2's tiles.
void rows_job(const void* ctx, int64_t r0, int64_t r1) {
  const Job& j = *static_cast<const Job*>(ctx);
  if (j.avx2 && j.W->format == WeightFormat::bf16) return bf16_rows_avx2(j, r0, r1);
  for (int64_t rb = r0; rb < r1; rb += 4) {
    const int64_t re = std::min(r1, rb + 4);
    for (int64_t i = 0; i < j.n; ++i)
      for (int64_t r = rb; r < re; ++r) j.Y[i * j.W->rows + r] = dot_one(j, r, i);
  }
}

}  // namespace

void quant_matmul(const QuantMatrix& W, const float* bias, const float* X, float* Y, int64_t n) {
  thread_local std::vector<float> xp, xs;
  thread_local std::vector<int8_t> xq;
  const int64_t ld = W.ld, nb = ld / kQ8Block;
  Job job{&W, bias, nullptr, nullptr, nullptr, Y, n, active_kernel() == Kernel::avx2};
  if (W.format == WeightFormat::int8) {
    if (static_cast<int64_t>(xq.size()) < n * ld) xq.resize(n * ld);
    if (static_cast<int64_t>(xs.size()) < n * nb) xs.resize(n * nb);
    for (int64_t i = 0; i < n; ++i)
      q8_quantize_row(X + i * W.cols, W.cols, ld, xq.data() + i * ld, xs.data() + i * nb);
    job.xq = xq.data();
    job.xs = xs.data();
  } else {
    if (static_cast<int64_t>(xp.size()) < n * ld) xp.resize(n * ld);
    for (int64_t i = 0; i < n; ++i) {
      std::copy(X + i * W.cols, X + (i + 1) * W.cols, xp.begin() + i * ld);
      std::fill(xp.begin() + i * ld + W.cols, xp.begin() + (i + 1) * ld, 0.f);
    }
    job.xp = xp.data();
  }
  parallel_rows(rows_job, &job, W.rows, n * W.rows * W.cols);
}

}  // namespace seqlab::infer
