// FastModel::step_batch (the server's continuous batch) against step(): each row of a batched
// step equals that sequence stepped alone, with the rows at different positions, for softmax
// attention (plain, and with RoPE + grouped-query attention + a SwiGLU MLP + parallel residual),
// linear attention, the GRU (its own batched step) and the LSTM (the default per-row loop).
// The batch's products are matmul_rows_blocked, one matvec per row with the weights reused from
// cache, so every row is bitwise its solo step.
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

class FastBatch : public ::testing::TestWithParam<BatchCase> {};

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
  FastModel batched(m), solo(m);
  for (int64_t B : {1, 3, 6}) {
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

INSTANTIATE_TEST_SUITE_P(Mixers, FastBatch,
                         ::testing::Values(BatchCase{"softmax", "softmax"},
                                           BatchCase{"softmax_rope_gqa", "softmax", true},
                                           BatchCase{"t2r", "t2r"},
                                           BatchCase{"hedgehog_rope_gqa", "hedgehog", true},
                                           BatchCase{"gru", "gru"}, BatchCase{"lstm", "lstm"}),
                         [](const auto& info) { return info.param.name; });

// The batch's product against matvec row by row, bitwise, with odd sizes: rows past the last
// multiple of 4, inputs past the last group of 4, columns past the last multiple of 8, a bias.
TEST(FastBatchKernel, BlockedRowsEqualMatvecBitwise) {
  torch::manual_seed(13);
  for (int64_t n : {1, 4, 7, 16}) {
    for (int64_t rows : {36, 37, 70}) {
      for (int64_t cols : {32, 29}) {
        auto W = torch::randn({rows, cols}), b = torch::randn({rows}), X = torch::randn({n, cols});
        std::vector<float> got(n * rows), want(n * rows);
        infer::matmul_rows_blocked(W.data_ptr<float>(), b.data_ptr<float>(), X.data_ptr<float>(),
                                   got.data(), n, rows, cols);
        for (int64_t i = 0; i < n; ++i)
          infer::matvec(W.data_ptr<float>(), b.data_ptr<float>(), X.data_ptr<float>() + i * cols,
                        want.data() + i * rows, rows, cols);
        EXPECT_EQ(got, want) << "n " << n << " rows " << rows << " cols " << cols;
      }
    }
  }
}
