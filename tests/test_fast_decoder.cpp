// The fast decoder against LibTorch: every attention mixer and feature map, the whole model at
// every position, the scalar kernels against the AVX2 ones, and the decoder state (branching,
// saving, resuming).
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/core/log.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/train/trainer.h"

#include "mixer_testing.h"

#include <unistd.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;
using seqlab::infer::DecoderState;
using seqlab::infer::FastModel;
using seqlab::infer::Kernel;

namespace {

ModelConfig lm_config(const std::string& arch, const std::string& pos = "auto") {
  ModelConfig c;
  c.mixer = small_config(arch);
  c.mixer.d_model = 32;
  c.mixer.n_head = 4;
  c.mixer.d_feature = 6;
  c.mixer.max_len = 24;
  c.n_layer = 2;
  c.mlp_ratio = 2;
  c.vocab_size = 29;
  c.pos = pos;
  c.validate();
  return c;
}

// Max |a - b| / max |b| over the logits of every position.
double rel_error(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

// Runs the fast decoder over tokens [T]; returns logits [T,V].
torch::Tensor fast_logits(FastModel& fm, const torch::Tensor& tokens, DecoderState& s) {
  const int64_t T = tokens.size(0), V = fm.vocab_size();
  auto out = torch::empty({T, V});
  for (int64_t t = 0; t < T; ++t) fm.step(tokens[t].item<int64_t>(), s, out[t].data_ptr<float>());
  return out;
}

class FastAttention : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(FastAttention, EqualsTheLibTorchModelAtEveryPosition) {
  for (const char* pos : {"auto", "sinusoidal"}) {
    SCOPED_TRACE(pos);
    torch::manual_seed(3);
    SeqModelImpl m(lm_config(GetParam(), pos));
    {
      // Larger weights than the default init, so that attention is far from uniform.
      torch::NoGradGuard ng;
      for (auto& p : m.named_parameters())
        if (p.key().find("mixer.q.") != std::string::npos ||
            p.key().find("mixer.k.") != std::string::npos)
          p.value().mul_(3.0);
    }
    m.eval();
    torch::NoGradGuard ng;
    auto tokens = torch::randint(0, 29, {1, 20}, torch::kLong);
    auto want = m.forward(tokens).squeeze(0);  // [T,V]
    for (Kernel k : {Kernel::scalar, Kernel::avx2}) {
      infer::set_kernel(k);
      FastModel fm(m);
      auto s = fm.init_state();
      auto got = fast_logits(fm, tokens.squeeze(0), s);
      EXPECT_LE(rel_error(got, want), 1e-4) << infer::kernel_name(k);
      EXPECT_EQ(s.pos, 20);
    }
    infer::set_kernel(Kernel::automatic);
  }
}

INSTANTIATE_TEST_SUITE_P(AllMaps, FastAttention,
                         ::testing::Values("softmax", "elu1", "relu", "rfa", "performer", "t2r",
                                           "hedgehog"));

// Trained weights, not just random ones: a few hundred steps move every parameter (feature maps,
// gates, SSM parameters) away from its initialisation.
TEST(FastDecoder, EqualsTheLibTorchModelAfterTraining) {
  for (const char* arch : {"softmax", "hedgehog", "t2r", "elu1", "relu", "rfa", "performer",
                           "elman", "gru", "lstm", "qrnn", "s4d", "mamba"}) {
    SCOPED_TRACE(arch);
    const auto dir = (std::filesystem::temp_directory_path() /
                      ("seqlab_fast_trained." + std::to_string(getpid()) + "." + arch))
                         .string();
    std::filesystem::remove_all(dir);
    ModelConfig mc;
    mc.mixer.arch = arch;
    mc.mixer.d_model = 32;
    mc.mixer.n_head = 4;
    mc.mixer.max_len = 64;
    mc.n_layer = 2;
    TaskConfig tc;
    tc.task = "copy";
    tc.max_len = 24;
    TrainConfig trc;
    trc.steps = 60;
    trc.batch = 8;
    trc.lr = 3e-3;
    trc.threads = 1;
    trc.eval_every = 60;
    trc.eval_size = 16;
    log_level() = 0;
    train_model(mc, tc, trc, dir, /*resume=*/false);
    auto lm = load_model_dir(dir);
    torch::NoGradGuard ng;
    auto tokens = torch::randint(0, lm.config.vocab_size, {1, 24}, torch::kLong);
    auto want = lm.model->forward(tokens).squeeze(0);  // [T,V]
    FastModel fm(*lm.model);
    auto s = fm.init_state();
    EXPECT_LE(rel_error(fast_logits(fm, tokens.squeeze(0), s), want), 1e-4);
    std::filesystem::remove_all(dir);
  }
}

// Chunked prefill (matrix-matrix projections) equals stepping token by token, across chunk
// boundaries, and leaves the same state behind.
TEST(FastDecoder, ChunkedPrefillEqualsStepping) {
  for (const char* arch :
       {"softmax", "t2r", "hedgehog", "performer", "rfa", "lstm", "gru", "qrnn", "s4d", "mamba"}) {
    SCOPED_TRACE(arch);
    auto c = lm_config(arch);
    c.mixer.max_len = 200;
    torch::manual_seed(6);
    SeqModelImpl m(c);
    m.eval();
    FastModel fm(m);
    const int64_t n = 150;  // chunks of 64, 64, 22
    auto tokens = torch::randint(0, 29, {n}, torch::kLong);
    std::vector<int64_t> ids(tokens.data_ptr<int64_t>(), tokens.data_ptr<int64_t>() + n);
    auto a = fm.init_state(), b = fm.init_state();
    std::vector<float> la(29), lb(29);
    fm.prefill(ids.data(), n, a, la.data());
    for (int64_t i = 0; i < n; ++i) fm.step(ids[i], b, lb.data());
    EXPECT_EQ(a.pos, n);
    auto ta = torch::from_blob(la.data(), {29}), tb = torch::from_blob(lb.data(), {29});
    EXPECT_LE(rel_error(ta, tb), 1e-5);
    auto sa = torch::from_blob(a.data.data(), {static_cast<int64_t>(a.data.size())});
    auto sb = torch::from_blob(b.data.data(), {static_cast<int64_t>(b.data.size())});
    EXPECT_LE((sa - sb).abs().max().item<double>(), 1e-4 * (1 + sb.abs().max().item<double>()));
    // And against LibTorch's forward at the last position.
    torch::NoGradGuard ng;
    auto want = m.forward(tokens.unsqueeze(0)).select(1, n - 1).squeeze(0);
    EXPECT_LE(rel_error(ta, want), 1e-4);
  }
}

TEST(FastDecoder, ScalarAndAvx2KernelsAgree) {
  if (!infer::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::manual_seed(1);
  for (int64_t cols : {1, 7, 8, 33, 64, 130})
    for (int64_t rows : {1, 3, 4, 9}) {
      auto W = torch::randn({rows, cols}), x = torch::randn({cols}), b = torch::randn({rows});
      auto ys = torch::empty({rows}), ya = torch::empty({rows});
      infer::set_kernel(Kernel::scalar);
      infer::matvec(W.data_ptr<float>(), b.data_ptr<float>(), x.data_ptr<float>(),
                    ys.data_ptr<float>(), rows, cols);
      infer::set_kernel(Kernel::avx2);
      infer::matvec(W.data_ptr<float>(), b.data_ptr<float>(), x.data_ptr<float>(),
                    ya.data_ptr<float>(), rows, cols);
      auto ref = torch::mv(W, x) + b;
      EXPECT_TRUE(all_close(ys, ref, 1e-4, "scalar"));
      EXPECT_TRUE(all_close(ya, ref, 1e-4, "avx2"));
      // vecmat: p^T M
      auto pr = torch::randn({rows}), vs = torch::empty({cols}), va = torch::empty({cols});
      infer::set_kernel(Kernel::scalar);
      infer::vecmat(W.data_ptr<float>(), pr.data_ptr<float>(), vs.data_ptr<float>(), rows, cols);
      infer::set_kernel(Kernel::avx2);
      infer::vecmat(W.data_ptr<float>(), pr.data_ptr<float>(), va.data_ptr<float>(), rows, cols);
      EXPECT_TRUE(all_close(vs, torch::mv(W.t(), pr), 1e-4, "vecmat scalar"));
      EXPECT_TRUE(all_close(va, torch::mv(W.t(), pr), 1e-4, "vecmat avx2"));
      // matmul_rows is matvec per row
      auto X = torch::randn({5, cols}), Y = torch::empty({5, rows});
      infer::matmul_rows(W.data_ptr<float>(), nullptr, X.data_ptr<float>(), Y.data_ptr<float>(), 5,
                         rows, cols);
      EXPECT_TRUE(all_close(Y, torch::matmul(X, W.t()), 1e-4, "matmul_rows"));
    }
  infer::set_kernel(Kernel::automatic);
}

// The prefill GEMM (packed 16-row panels, 4 x 16 register tiles) against a double-precision
// reference at every edge: input rows not a multiple of 4, weight rows not a multiple of 16,
// columns not a multiple of 8, with and without bias; the per-row path it replaces is bitwise
// one matvec per input row.
TEST(FastDecoder, TiledPrefillGemmEqualsTheReference) {
  if (!infer::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  infer::set_kernel(Kernel::avx2);
  ASSERT_EQ(infer::threads(), 1);  // the GEMM path is the single-threaded one
  torch::manual_seed(4);
  for (int64_t n : {1, 3, 4, 5, 8, 9, 17})
    for (int64_t rows : {4, 5, 16, 17, 67, 130})
      for (int64_t cols : {7, 8, 33, 64}) {
        auto W = torch::randn({rows, cols}), X = torch::randn({n, cols}), b = torch::randn({rows});
        for (bool with_bias : {false, true}) {
          const float* bias = with_bias ? b.data_ptr<float>() : nullptr;
          auto ref = torch::matmul(X.to(torch::kDouble), W.to(torch::kDouble).t());
          if (with_bias) ref = ref + b.to(torch::kDouble);
          ASSERT_TRUE(infer::prefill_tiled());
          auto tiled = torch::full({n, rows}, std::nanf(""));
          infer::matmul_rows(W.data_ptr<float>(), bias, X.data_ptr<float>(),
                             tiled.data_ptr<float>(), n, rows, cols);
          EXPECT_TRUE(all_close(tiled, ref.to(torch::kFloat), 1e-4, "tiled matmul_rows"))
              << n << " x " << rows << " x " << cols;
          infer::set_prefill_tiled(false);
          auto per_row = torch::empty({n, rows}), mv = torch::empty({n, rows});
          infer::matmul_rows(W.data_ptr<float>(), bias, X.data_ptr<float>(),
                             per_row.data_ptr<float>(), n, rows, cols);
          infer::set_prefill_tiled(true);
          for (int64_t i = 0; i < n; ++i)
            infer::matvec(W.data_ptr<float>(), bias, X[i].data_ptr<float>(),
                          mv[i].data_ptr<float>(), rows, cols);
          EXPECT_TRUE(torch::equal(per_row, mv));
        }
      }
  infer::set_kernel(Kernel::automatic);
}

// Attention's weights-times-values for head widths 8..64: the one-pass kernel gives bitwise the
// general loop's result, and both the reference.
TEST(FastDecoder, NarrowVecmatEqualsTheGeneralLoopBitwise) {
  if (!infer::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  infer::set_kernel(Kernel::avx2);
  torch::manual_seed(6);
  for (int64_t cols = 8; cols <= 72; cols += 8)
    for (int64_t rows : {1, 7, 1000}) {
      auto M = torch::randn({rows, cols}), p = torch::rand({rows});
      auto narrow = torch::empty({cols}), general = torch::empty({cols});
      infer::vecmat(M.data_ptr<float>(), p.data_ptr<float>(), narrow.data_ptr<float>(), rows, cols);
      infer::set_vecmat_narrow(false);
      infer::vecmat(M.data_ptr<float>(), p.data_ptr<float>(), general.data_ptr<float>(), rows,
                    cols);
      infer::set_vecmat_narrow(true);
      EXPECT_TRUE(torch::equal(narrow, general)) << rows << " x " << cols;
      EXPECT_TRUE(all_close(narrow, torch::mv(M.t(), p), 1e-3, "vecmat")) << rows << " x " << cols;
    }
  infer::set_kernel(Kernel::automatic);
}

TEST(FastDecoder, ThreadsOverRowsGiveBitwiseTheSameResult) {
  torch::manual_seed(9);
  for (int64_t rows : {8, 37, 256, 1031}) {
    const int64_t cols = 200;
    auto W = torch::randn({rows, cols}), x = torch::randn({cols}), b = torch::randn({rows});
    auto y1 = torch::empty({rows}), y3 = torch::empty({rows});
    infer::set_threads(1);
    infer::matvec(W.data_ptr<float>(), b.data_ptr<float>(), x.data_ptr<float>(),
                  y1.data_ptr<float>(), rows, cols);
    infer::set_threads(3);
    EXPECT_EQ(infer::threads(), 3);
    for (int rep = 0; rep < 50; ++rep) {
      y3.zero_();
      infer::matvec(W.data_ptr<float>(), b.data_ptr<float>(), x.data_ptr<float>(),
                    y3.data_ptr<float>(), rows, cols);
      ASSERT_TRUE(torch::equal(y1, y3)) << "rows " << rows << " rep " << rep;
    }
  }
  // A whole model: logits with two threads equal one thread's, bit for bit.
  auto c = lm_config("t2r");
  c.mixer.d_model = 128;
  c.mlp_ratio = 4;
  torch::manual_seed(10);
  SeqModelImpl m(c);
  FastModel fm(m);
  auto tokens = torch::randint(0, 29, {12}, torch::kLong);
  infer::set_threads(1);
  auto s1 = fm.init_state();
  auto one = fast_logits(fm, tokens, s1);
  infer::set_threads(2);
  auto s2 = fm.init_state();
  auto two = fast_logits(fm, tokens, s2);
  infer::set_threads(1);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(FastDecoder, VectorisedSoftmaxMatchesTheScalarOne) {
  torch::manual_seed(2);
  for (int64_t n : {1, 5, 8, 13, 64, 1000}) {
    for (double scale : {1.0, 10.0, 60.0}) {
      auto x = torch::randn({n}) * scale;
      auto a = x.clone(), b = x.clone();
      infer::set_kernel(Kernel::scalar);
      infer::softmax(a.data_ptr<float>(), n);
      infer::set_kernel(Kernel::avx2);
      infer::softmax(b.data_ptr<float>(), n);
      auto ref = torch::softmax(x.to(torch::kDouble), 0);
      EXPECT_LE((a - ref).abs().max().item<double>(), 1e-6 * ref.max().item<double>() + 1e-30);
      EXPECT_LE((b - ref).abs().max().item<double>(), 1e-6 * ref.max().item<double>() + 1e-30)
          << "n " << n << " scale " << scale;
    }
  }
  infer::set_kernel(Kernel::automatic);
}

// The AVX2 GELUs (erf by a polynomial, tanh through exp) and LayerNorm (fp32 lanes) against
// float64 references, on values from 0 to far past where the activations saturate, and at sizes
// that leave a scalar tail.
TEST(FastDecoder, VectorisedGeluAndLayerNormMatchFloat64) {
  if (!infer::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  torch::manual_seed(3);
  for (int64_t n : {1, 7, 8, 13, 256, 1027}) {
    for (double scale : {1e-3, 1.0, 4.0, 30.0}) {
      auto x = (torch::randn({n}) * scale).contiguous();
      if (n > 8) x[3] = 0.0f, x[4] = -200.0f, x[5] = 200.0f;
      const auto xd = x.to(torch::kDouble);
      const auto ref_erf = 0.5 * xd * (1 + torch::erf(xd / std::sqrt(2.0)));
      const auto ref_tanh =
          0.5 * xd * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd.pow(3))));
      const auto g = torch::randn({n}), b = torch::randn({n});
      const auto ref_ln =
          (xd - xd.mean()) / torch::sqrt(xd.var(0, false) + 1e-5) * g.to(torch::kDouble) +
          b.to(torch::kDouble);
      for (auto k : {Kernel::scalar, Kernel::avx2}) {
        infer::set_kernel(k);
        auto a = x.clone(), t = x.clone(), y = torch::empty({n});
        infer::gelu(a.data_ptr<float>(), n);
        infer::gelu_tanh(t.data_ptr<float>(), n);
        infer::layer_norm(x.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(),
                          y.data_ptr<float>(), n);
        // Element by element: 1e-6 of each value (absolute below 1), so that the +-200 entries
        // do not loosen the bound for the rest.
        const auto within = [](const torch::Tensor& got, const torch::Tensor& ref) {
          return ((got - ref).abs() <= 1e-6 * ref.abs().clamp_min(1.0)).all().item<bool>();
        };
        EXPECT_TRUE(within(a, ref_erf))
            << infer::kernel_name(k) << " n " << n << " scale " << scale;
        EXPECT_TRUE(within(t, ref_tanh))
            << infer::kernel_name(k) << " n " << n << " scale " << scale;
        if (n > 1) {
          EXPECT_LE((y - ref_ln).abs().max().item<double>(),
                    2e-5 * ref_ln.abs().max().item<double>())
              << infer::kernel_name(k) << " n " << n << " scale " << scale;
        }
      }
    }
  }
  infer::set_kernel(Kernel::automatic);
  // Non-finite inputs stay non-finite (a broken model must not look healthy).
  for (auto k : {Kernel::scalar, Kernel::avx2}) {
    infer::set_kernel(k);
    float v[8] = {NAN, 1, 2, 3, 4, 5, 6, 7}, w[8] = {NAN, 1, 2, 3, 4, 5, 6, 7};
    infer::gelu(v, 8);
    infer::gelu_tanh(w, 8);
    EXPECT_TRUE(std::isnan(v[0])) << infer::kernel_name(k);
    EXPECT_TRUE(std::isnan(w[0])) << infer::kernel_name(k);
  }
  infer::set_kernel(Kernel::automatic);
}

TEST(FastDecoder, BranchSaveAndResumeEqualAnUninterruptedRun) {
  torch::manual_seed(4);
  SeqModelImpl m(lm_config("hedgehog"));
  m.eval();
  FastModel fm(m);
  auto tokens = torch::randint(0, 29, {16}, torch::kLong);
  auto s = fm.init_state();
  auto whole = fast_logits(fm, tokens, s);
  // First half, then a copy (branch) and a file round trip, then the second half on each.
  auto a = fm.init_state();
  fast_logits(fm, tokens.narrow(0, 0, 7), a);
  DecoderState branch = a;
  const auto path = (std::filesystem::temp_directory_path() /
                     ("seqlab_state." + std::to_string(getpid()) + ".safetensors"))
                        .string();
  fm.save_state(path, a);
  auto loaded = fm.load_state(path);
  EXPECT_EQ(loaded.pos, 7);
  auto rest = tokens.narrow(0, 7, 9);
  auto from_a = fast_logits(fm, rest, a);
  auto from_branch = fast_logits(fm, rest, branch);
  auto from_file = fast_logits(fm, rest, loaded);
  EXPECT_TRUE(torch::equal(from_a, whole.narrow(0, 7, 9)));
  EXPECT_TRUE(torch::equal(from_branch, from_a));
  EXPECT_TRUE(torch::equal(from_file, from_a));
  // A state of another model is refused.
  SeqModelImpl other(lm_config("t2r"));
  FastModel fo(other);
  EXPECT_THROW(fo.load_state(path), Error);
  std::filesystem::remove(path);
}

TEST(FastDecoder, LoadStateRefusesWrongDtypesWithASeqlabError) {
  // A "pos" stored as F32 made item<int64_t>() throw c10::Error (1e30) or round (2.5), instead of
  // a seqlab::Error naming the file.
  SeqModelImpl m(lm_config("hedgehog"));
  m.eval();
  FastModel fm(m);
  const auto meta = std::map<std::string, std::string>{{"format", "seqlab-decoder-state"},
                                                       {"model", m.config().to_json().dump()}};
  const auto state = torch::zeros({fm.state_size()});
  for (double pos : {1e30, 2.5}) {
    const auto bytes =
        save_safetensors_bytes({{"state", state}, {"pos", torch::tensor({pos})}}, meta);
    try {
      fm.load_state_bytes(bytes, "pos.safetensors");
      ADD_FAILURE() << "a float position was accepted";
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find("pos.safetensors: expected \"state\" F32 and \"pos\" I64"),
          std::string::npos)
          << e.what();
    }
  }
  const auto ok = save_safetensors_bytes(
      {{"state", state}, {"pos", torch::tensor({int64_t{3}}, torch::kLong)}}, meta);
  EXPECT_EQ(fm.load_state_bytes(ok, "ok.safetensors").pos, 3);
}

TEST(FastDecoder, AStateAtTheLastPositionCannotAdvance) {
  // Found by fuzz/fuzz_state.cpp: a state file with pos = 2^63 - 1 loaded, and step() then
  // computed pos + 1 (signed overflow, UBSan) on a model without positions.
  SeqModelImpl m(lm_config("hedgehog", "none"));
  m.eval();
  FastModel fm(m);
  const auto meta = std::map<std::string, std::string>{{"format", "seqlab-decoder-state"},
                                                       {"model", m.config().to_json().dump()}};
  const int64_t last = std::numeric_limits<int64_t>::max();
  auto s =
      fm.load_state_bytes(save_safetensors_bytes({{"state", torch::zeros({fm.state_size()})},
                                                  {"pos", torch::tensor({last}, torch::kLong)}},
                                                 meta),
                          "last.safetensors");
  std::vector<float> logits(fm.vocab_size());
  const int64_t tokens[] = {1, 2};
  try {
    fm.step(1, s, logits.data());
    ADD_FAILURE() << "step() advanced past the last position";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 9223372036854775807 cannot advance"),
              std::string::npos)
        << e.what();
  }
  s.pos = last - 1;
  EXPECT_THROW(fm.prefill(tokens, 2, s, logits.data()), Error);
  EXPECT_EQ(s.pos, last - 1);
}

TEST(FastDecoder, RefusesWhatItCannotRun) {
  torch::manual_seed(5);
  auto c = lm_config("softmax");
  c.head = "classify";
  c.n_classes = 3;
  SeqModelImpl cls(c);
  EXPECT_THROW(FastModel{cls}, Error);
  SeqModelImpl m(lm_config("softmax"));
  FastModel fm(m);
  auto s = fm.init_state();
  std::vector<float> logits(29);
  EXPECT_THROW(fm.step(29, s, logits.data()), Error);  // outside the vocabulary
  for (int64_t t = 0; t < 24; ++t) fm.step(1, s, logits.data());
  EXPECT_THROW(fm.step(1, s, logits.data()), Error);  // past max_len (learned positions)
}
