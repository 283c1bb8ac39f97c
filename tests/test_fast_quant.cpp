// The fast decoder's bf16 and int8 weights (infer/kernels_quant.h, issue 35): the AVX2 dot products
// against their scalar twins (bitwise), the products against float64 sums of the very numbers they
// multiply (tight), and against the fp32 product (the formats' own error); a whole model's logits
// in each format against fp32 for every attention mixer kind; the batched rows are in
// tests/test_fast_batch.cpp.
#include "seqlab/core/quant.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/infer/kernels_quant.h"
#include "seqlab/model/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace seqlab;
using namespace seqlab::infer;

namespace {

std::vector<float> randn(int64_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// ||a - b|| / ||b||
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return std::sqrt(num / den);
}

// Y = X W^T + b in float64 over fp32 W [rows, cols], X [n, cols].
std::vector<float> reference(const std::vector<float>& W, const std::vector<float>& b,
                             const std::vector<float>& X, int64_t n, int64_t rows, int64_t cols) {
  std::vector<float> Y(n * rows);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < rows; ++r) {
      double s = b.empty() ? 0.0 : b[r];
      for (int64_t c = 0; c < cols; ++c) s += double{W[r * cols + c]} * X[i * cols + c];
      Y[i * rows + r] = static_cast<float>(s);
    }
  return Y;
}

}  // namespace

TEST(FastQuant, Avx2DotsEqualTheirScalarTwinsBitwise) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  for (int64_t ld : {32, 64, 704}) {
    const auto w = randn(ld, 1), x = randn(ld, 2), ws = randn(ld / 32, 3), xs = randn(ld / 32, 4);
    std::vector<uint16_t> h(ld);
    std::vector<int8_t> qw(ld), qx(ld);
    for (int64_t i = 0; i < ld; ++i) {
      h[i] = float_to_bf16(w[i]);
      qw[i] = static_cast<int8_t>(std::clamp(std::round(w[i] * 50), -127.f, 127.f));
      qx[i] = static_cast<int8_t>(std::clamp(std::round(x[i] * 50), -127.f, 127.f));
    }
    qw[0] = 127;  // the extremes: |pair sums| up to 2 * 127 * 127 must not saturate
    qx[0] = -127;
    qw[1] = -127;
    qx[1] = -127;
    EXPECT_EQ(infer::detail::bf16_dot_avx2(h.data(), x.data(), ld),
              infer::detail::bf16_dot_scalar(h.data(), x.data(), ld));
    EXPECT_EQ(infer::detail::q8_dot_avx2(qw.data(), ws.data(), qx.data(), xs.data(), ld / 32),
              infer::detail::q8_dot_scalar(qw.data(), ws.data(), qx.data(), xs.data(), ld / 32));
    // The scalar twin's integer sums are exact: against float64 of the same integers.
    double want = 0;
    for (int64_t j = 0; j < ld / 32; ++j) {
      int64_t s = 0;
      for (int64_t e = 0; e < 32; ++e) s += int64_t{qw[32 * j + e]} * qx[32 * j + e];
      want += static_cast<double>(s) * (double{ws[j]} * xs[j]);
    }
    EXPECT_NEAR(infer::detail::q8_dot_scalar(qw.data(), ws.data(), qx.data(), xs.data(), ld / 32),
                want, 1e-4 * (std::fabs(want) + 1));
  }
}

// The bf16 tile (one weight row x N inputs) gives each input the very dot product of the one-input
// kernel and of the scalar twin.
TEST(FastQuant, Bf16TilesEqualTheDotProductBitwise) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const int64_t ld = 96;
  const auto w = randn(ld, 11);
  std::vector<uint16_t> h(w.size());
  for (size_t i = 0; i < w.size(); ++i) h[i] = float_to_bf16(w[i]);
  std::vector<std::vector<float>> xs;
  for (int i = 0; i < infer::detail::kBf16TileInputs; ++i) xs.push_back(randn(ld, 20 + i));
  const float* x[infer::detail::kBf16TileInputs];
  for (int i = 0; i < infer::detail::kBf16TileInputs; ++i) x[i] = xs[i].data();
  for (int N = 1; N <= infer::detail::kBf16TileInputs; ++N) {
    float out[infer::detail::kBf16TileInputs];
    infer::detail::bf16_tile_avx2(h.data(), ld, x, N, out);
    for (int i = 0; i < N; ++i) {
      const float want = infer::detail::bf16_dot_scalar(h.data(), x[i], ld);
      EXPECT_EQ(out[i], want) << "N " << N << " input " << i;
      EXPECT_EQ(infer::detail::bf16_dot_avx2(h.data(), x[i], ld), want);
    }
  }
}

// Each format's product equals the float64 product of the numbers it really multiplies (bf16: the
// rounded weights; int8: the dequantized weights and inputs) to fp32 rounding, and the fp32
// product within the format's own error: bf16 (8-bit mantissa) under 1%, int8 (weights and
// inputs on 255 levels per block of 32) under 2% of the outputs' norm.
TEST(FastQuant, ProductsMatchFloat64AndFp32WithinTheFormatsError) {
  const int64_t rows = 70, cols = 77, n = 5;  // a tail block of 13 columns, rows past 4s
  const auto W = randn(rows * cols, 5, 0.05f), b = randn(rows, 6), X = randn(n * cols, 7);
  const auto exact = reference(W, b, X, n, rows, cols);
  for (auto kernel : {Kernel::avx2, Kernel::scalar}) {
    set_kernel(kernel);
    std::vector<float> Y(n * rows);
    QuantMatrix h(W.data(), rows, cols, WeightFormat::bf16);
    quant_matmul(h, b.data(), X.data(), Y.data(), n);
    std::vector<float> Wb(W.size());
    for (size_t i = 0; i < W.size(); ++i) Wb[i] = bf16_to_float(float_to_bf16(W[i]));
    EXPECT_LT(rel_err(Y, reference(Wb, b, X, n, rows, cols)), 1e-6);
    EXPECT_LT(rel_err(Y, exact), 1e-2);
    EXPECT_GT(rel_err(Y, exact), 0.0) << "bf16 rounded nothing: the test cannot tell";

    QuantMatrix q(W.data(), rows, cols, WeightFormat::int8);
    quant_matmul(q, b.data(), X.data(), Y.data(), n);
    std::vector<float> Wq(rows * q.ld), Xq(X.size());
    dequantize_q8(q.q.data(), q.scales.data(), rows, q.ld, Wq.data());  // padded [rows, ld]
    std::vector<float> Wd(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      std::copy(Wq.begin() + r * q.ld, Wq.begin() + r * q.ld + cols, Wd.begin() + r * cols);
    std::vector<int8_t> xq(q.ld);
    std::vector<float> xs(q.ld / 32);
    for (int64_t i = 0; i < n; ++i) {
      infer::detail::q8_quantize_row(X.data() + i * cols, cols, q.ld, xq.data(), xs.data());
      for (int64_t c = 0; c < cols; ++c) Xq[i * cols + c] = xq[c] * xs[c / 32];
    }
    EXPECT_LT(rel_err(Y, reference(Wd, b, Xq, n, rows, cols)), 1e-6);
    EXPECT_LT(rel_err(Y, exact), 2e-2);
    EXPECT_GT(rel_err(Y, exact), 1e-4) << "int8 rounded nothing: the test cannot tell";
  }
  set_kernel(Kernel::automatic);
}

// A whole model in each format against fp32, every attention mixer kind and the Llama layout: the
// logits of 12 tokens within the format's error, and the same with the products on 2 threads
// (bitwise one thread's).
TEST(FastQuant, WholeModelLogitsStayCloseToFp32) {
  for (const std::string arch : {"softmax", "t2r", "hedgehog", "hybrid", "mamba"})
    for (bool llama : {false, true}) {
      SCOPED_TRACE(arch + (llama ? " llama" : ""));
      ModelConfig c;
      c.mixer.arch = arch;
      c.mixer.d_model = 64;
      c.mixer.n_head = 4;
      c.mixer.d_feature = 8;
      c.mixer.max_len = 64;
      c.mixer.window = arch == "hybrid" ? 4 : 0;
      c.mixer.d_state = 4;
      c.n_layer = 2;
      c.vocab_size = 50;
      if (llama) {
        c.mixer.rope = arch != "mamba";
        c.mixer.n_kv_head = arch == "mamba" ? 0 : 2;
        c.norm = "rms";
        c.mlp = "swiglu";
        c.d_mlp = 88;  // not a multiple of 32
        c.tie_embeddings = false;
      }
      c.validate();
      torch::manual_seed(21);
      SeqModelImpl m(c);
      m.eval();
      FastModel f32(m), bf16(m, WeightFormat::bf16), int8(m, WeightFormat::int8);
      EXPECT_EQ(int8.weight_format(), WeightFormat::int8);
      auto s = f32.init_state(), sb = bf16.init_state(), sq = int8.init_state();
      std::vector<float> a(50), b(50), q(50), q2(50);
      double worst_b = 0, worst_q = 0;
      for (int64_t t = 0; t < 12; ++t) {
        const int64_t tok = (7 * t + 3) % 50;
        f32.step(tok, s, a.data());
        bf16.step(tok, sb, b.data());
        auto s2 = sq;
        int8.step(tok, sq, q.data());
        set_threads(2);
        int8.step(tok, s2, q2.data());
        set_threads(1);
        EXPECT_EQ(q, q2) << "2 threads differ at token " << t;
        worst_b = std::max(worst_b, rel_err(b, a));
        worst_q = std::max(worst_q, rel_err(q, a));
      }
      EXPECT_LT(worst_b, 2e-2);
      EXPECT_LT(worst_q, 5e-2);
      EXPECT_GT(worst_q, 0.0);
    }
}
