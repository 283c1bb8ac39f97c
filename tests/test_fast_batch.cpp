// FastModel::step_batch (the server's continuous batch) against step(): each row of a batched
// step equals that sequence stepped alone, with the rows at different positions, for every mixer
// the fast decoder runs (each has its own batched step): softmax attention (plain, and with RoPE +
// grouped-query attention + a SwiGLU MLP + parallel residual), linear attention, hybrid attention,
// the Elman RNN, GRU, LSTM, QRNN, S4D and Mamba; with both kernels (AVX2 and its scalar twin) and
// with the products split over two threads. The batch's products are matmul_rows_blocked, whose
// every output is summed in matvec's order, so every row is bitwise its solo step.
// Also: the packed states the session cache keeps (pack_state / unpack_state) restore a state
// exactly, and a softmax state packs to its used rows.
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/model/model.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace seqlab;
using seqlab::infer::DecoderState;
using seqlab::infer::FastModel;

namespace {

constexpr int64_t kV = 37;

struct BatchCase {
  std::string name, arch;
  bool llama = false;  // RoPE, GQA, RMSNorm, SwiGLU, parallel residual
  infer::Kernel kernel = infer::Kernel::automatic;
  int threads = 1;                           // infer::set_threads
  WeightFormat weights = WeightFormat::f32;  // FastModel's weight format (infer/kernels_quant.h)
};

std::ostream& operator<<(std::ostream& os, const BatchCase& c) {
  return os << c.name;
}

ModelConfig config_of(const BatchCase& k) {
  ModelConfig c;
  c.mixer.arch = k.arch;
  c.mixer.d_model = 32;
  c.mixer.n_head = 4;
  c.mixer.d_feature = 6;
  c.mixer.max_len = 64;
  c.mixer.window = k.arch == "hybrid" ? 4 : 0;
  c.mixer.qrnn_window = 2;
  c.mixer.d_state = 4;
  c.n_layer = 2;
  c.vocab_size = kV;
  if (k.llama) {
    c.mixer.rope = true;
    c.mixer.n_kv_head = 2;
    c.norm = "rms";
    c.mlp = "swiglu";
    c.d_mlp = 40;
    c.parallel_residual = true;
  }
  c.validate();
  return c;
}

// Sets the case's kernel and threads for one test, and restores the defaults after it.
class FastBatch : public ::testing::TestWithParam<BatchCase> {
 protected:
  void SetUp() override {
    infer::set_kernel(GetParam().kernel);
    infer::set_threads(GetParam().threads);
  }
  void TearDown() override {
    infer::set_kernel(infer::Kernel::automatic);
    infer::set_threads(1);
  }
};

}  // namespace

TEST_P(FastBatch, EachRowEqualsItsSoloStep) {
  torch::manual_seed(11);
  SeqModelImpl m(config_of(GetParam()));
  m.eval();
  {
    // Move norms and biases off their init, so that every parameter matters.
    torch::NoGradGuard ng;
    for (auto& p : m.parameters()) p.add_(0.05 * torch::randn_like(p));
  }
  FastModel batched(m, GetParam().weights), solo(m, GetParam().weights);
  for (int64_t B : {1, 3, 6, 13}) {
    SCOPED_TRACE("B = " + std::to_string(B));
    // Row i starts after a prompt of 2 i + 1 tokens: every row at its own position.
    std::vector<DecoderState> rows, alone;
    std::vector<int64_t> next(B);
    std::vector<float> logits(kV);
    for (int64_t i = 0; i < B; ++i) {
      auto s = solo.init_state();
      for (int64_t t = 0; t <= 2 * i; ++t) solo.step((7 * i + 3 * t) % kV, s, logits.data());
      rows.push_back(s);
      alone.push_back(s);
      next[i] = (5 * i + 1) % kV;
    }
    std::vector<DecoderState*> ptrs;
    for (auto& s : rows) ptrs.push_back(&s);
    std::vector<float> got(B * kV), want(kV);
    for (int step = 0; step < 5; ++step) {
      batched.step_batch(next.data(), ptrs.data(), B, got.data());
      for (int64_t i = 0; i < B; ++i) {
        solo.step(next[i], alone[i], want.data());
        std::vector<float> row(got.begin() + i * kV, got.begin() + (i + 1) * kV);
        EXPECT_EQ(rows[i].pos, alone[i].pos);
        EXPECT_EQ(row, want) << "row " << i << " step " << step;
        EXPECT_EQ(rows[i].data, alone[i].data) << "state of row " << i;
        next[i] = (next[i] * 3 + step + i) % kV;
      }
    }
  }
}

TEST_P(FastBatch, RefusesASharedStateAndBadTokens) {
  torch::manual_seed(12);
  SeqModelImpl m(config_of(GetParam()));
  FastModel fm(m);
  auto s = fm.init_state(), t = fm.init_state();
  std::vector<float> logits(2 * kV);
  DecoderState* same[] = {&s, &s};
  const int64_t tokens[] = {1, 2};
  EXPECT_THROW(fm.step_batch(tokens, same, 2, logits.data()), Error);
  DecoderState* two[] = {&s, &t};
  const int64_t bad[] = {1, kV};
  EXPECT_THROW(fm.step_batch(bad, two, 2, logits.data()), Error);
  EXPECT_EQ(s.pos, 0);
  EXPECT_EQ(t.pos, 0);
  fm.step_batch(tokens, two, 0, logits.data());  // no rows: nothing happens
  EXPECT_EQ(s.pos, 0);
}

TEST_P(FastBatch, PackedStatesRestoreExactly) {
  torch::manual_seed(14);
  SeqModelImpl m(config_of(GetParam()));
  FastModel fm(m);
  auto s = fm.init_state();
  std::vector<float> logits(kV), a(kV), b(kV);
  for (int64_t t = 0; t < 9; ++t) fm.step((3 * t + 1) % kV, s, logits.data());
  const auto packed = fm.pack_state(s);
  EXPECT_EQ(static_cast<int64_t>(packed.data.size()), fm.packed_size(9));
  EXPECT_LE(packed.data.size(), s.data.size());
  if (GetParam().arch == "softmax") {  // K and V rows 0..8 of every kv head, in every layer
    const auto& mc = fm.config().mixer;
    EXPECT_EQ(fm.packed_size(9), fm.config().n_layer * 2 * 9 * mc.kv_heads() * mc.d_head());
  } else {
    EXPECT_EQ(packed.data.size(), s.data.size());
  }
  auto back = fm.unpack_state(packed);
  EXPECT_EQ(back.pos, s.pos);
  EXPECT_EQ(back.data, s.data);
  fm.step(5, s, a.data());
  fm.step(5, back, b.data());
  EXPECT_EQ(a, b);
  auto bad = packed;
  bad.data.pop_back();
  EXPECT_THROW(fm.unpack_state(bad), Error);
}

INSTANTIATE_TEST_SUITE_P(
    Mixers, FastBatch,
    ::testing::Values(
        BatchCase{"softmax", "softmax"}, BatchCase{"softmax_rope_gqa", "softmax", true},
        BatchCase{"softmax_scalar", "softmax", false, infer::Kernel::scalar},
        BatchCase{"softmax_rope_gqa_2threads", "softmax", true, infer::Kernel::automatic, 2},
        BatchCase{"t2r", "t2r"}, BatchCase{"hedgehog_rope_gqa", "hedgehog", true},
        BatchCase{"hybrid", "hybrid"}, BatchCase{"hybrid_llama", "hybrid", true},
        BatchCase{"elman", "elman"}, BatchCase{"gru", "gru"}, BatchCase{"lstm", "lstm"},
        BatchCase{"lstm_scalar", "lstm", false, infer::Kernel::scalar}, BatchCase{"qrnn", "qrnn"},
        BatchCase{"s4d", "s4d"}, BatchCase{"mamba", "mamba"},
        BatchCase{"mamba_2threads", "mamba", false, infer::Kernel::automatic, 2},
        // Narrow weights: the quantized products keep each batched row bitwise its solo step.
        BatchCase{"softmax_rope_gqa_int8", "softmax", true, infer::Kernel::automatic, 1,
                  WeightFormat::int8},
        BatchCase{"softmax_rope_gqa_int8_2threads", "softmax", true, infer::Kernel::automatic, 2,
                  WeightFormat::int8},
        BatchCase{"t2r_int8_scalar", "t2r", false, infer::Kernel::scalar, 1, WeightFormat::int8},
        BatchCase{"hybrid_llama_bf16", "hybrid", true, infer::Kernel::automatic, 1,
                  WeightFormat::bf16},
        BatchCase{"hedgehog_bf16_2threads", "hedgehog", true, infer::Kernel::automatic, 2,
                  WeightFormat::bf16},
        BatchCase{"mamba_int8", "mamba", false, infer::Kernel::automatic, 1, WeightFormat::int8},
        BatchCase{"qrnn_bf16_scalar", "qrnn", false, infer::Kernel::scalar, 1, WeightFormat::bf16}),
    [](const auto& info) { return info.param.name; });

// The batch's product against matvec row by row, bitwise, with odd sizes: rows past the last
// multiple of 4 and of a cache block, inputs past the last group of 6 (the AVX2 tile) and of 4
// (the scalar one), columns past the last multiple of 8, with and without a bias; for the AVX2
// kernel, its scalar twin, and the products split over 2 threads (large enough to be split).
// matvec itself is tested against LibTorch (tests/test_fast_decoder.cpp) and the scalar kernel
// against float64 here.
TEST(FastBatchKernel, BlockedRowsEqualMatvecBitwise) {
  torch::manual_seed(13);
  for (auto kernel : {infer::Kernel::avx2, infer::Kernel::scalar}) {
    infer::set_kernel(kernel);
    for (int threads : {1, 2}) {
      infer::set_threads(threads);
      for (int64_t n : {1, 2, 5, 6, 7, 13, 32}) {
        for (int64_t rows : {36, 37, 70, 1030}) {
          for (int64_t cols : {32, 29, 688}) {
            auto W = torch::randn({rows, cols}), b = torch::randn({rows}),
                 X = torch::randn({n, cols});
            for (bool bias : {true, false}) {
              const float* bp = bias ? b.data_ptr<float>() : nullptr;
              std::vector<float> got(n * rows), want(n * rows);
              infer::matmul_rows_blocked(W.data_ptr<float>(), bp, X.data_ptr<float>(), got.data(),
                                         n, rows, cols);
              for (int64_t i = 0; i < n; ++i)
                infer::matvec(W.data_ptr<float>(), bp, X.data_ptr<float>() + i * cols,
                              want.data() + i * rows, rows, cols);
              ASSERT_EQ(got, want) << infer::kernel_name(kernel) << " threads " << threads << " n "
                                   << n << " rows " << rows << " cols " << cols << " bias " << bias;
              if (kernel != infer::Kernel::scalar || threads != 1 || n != 7) continue;
              // The scalar twin against float64: the reference the AVX2 path is bitwise equal
              // to is itself right.
              auto ref = (X.to(torch::kDouble).matmul(W.to(torch::kDouble).t()) +
                          (bias ? b.to(torch::kDouble) : torch::zeros({rows}, torch::kDouble)))
                             .to(torch::kFloat);
              auto g = torch::from_blob(got.data(), {n, rows}, torch::kFloat);
              EXPECT_TRUE(torch::allclose(g, ref, 1e-4, 1e-4));
            }
          }
        }
      }
    }
  }
  infer::set_threads(1);
  infer::set_kernel(infer::Kernel::automatic);
}
