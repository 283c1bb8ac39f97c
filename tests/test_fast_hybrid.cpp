// The fast hybrid attention (infer/mixers/hybrid.cpp) against its LibTorch twin
// (mixers/hybrid_attention.h): windows 0 (gated linear attention only), 1, 3, 8 and one longer
// than the sequence, decay 1 and 0.9, gate none and key, feature maps elu1, t2r and hedgehog,
// with RoPE (past its table) and grouped-query attention. Each case, on the mixer alone:
// step() under both kernels against the twin's step() and forward() at every position of a
// sequence longer than the window, and its state against the twin's (the documented layout);
// prefill in one call and in pieces against the steps; step_batch rows bitwise equal to solo
// steps. On whole 2-layer models: FastModel step, prefill and step_batch against SeqModel.
// Exponential feature maps (performer) are refused.
//
// T = tokens, D = d_model, H = heads, G = kv heads, V = vocabulary.
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/mixers/hybrid_attention.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"

#include "mixer_testing.h"

#include <limits>

using namespace seqlab;
using namespace seqlab::testing;
using seqlab::infer::DecoderState;
using seqlab::infer::FastModel;
using seqlab::infer::Kernel;

namespace {

constexpr int64_t kT = 20;      // longer than every window but one
constexpr double kTol = 1e-4;   // max |fast - torch| / max |torch|, at every position
constexpr int64_t kGuard = 16;  // floats past state and scratch that must stay untouched
constexpr float kSentinel = 12345.0f;
constexpr int64_t kV = 29;

struct Case {
  std::string name;
  int64_t window = 0;
  double decay = 1.0;
  std::string gate = "none";
  std::string feature_map = "elu1";
  int64_t kv_heads = 0;  // n_kv_head (0 = H)
  bool rope = false;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

MixerConfig mixer_config(const Case& c) {
  MixerConfig m;
  m.arch = HybridAttentionImpl::kArch;
  m.feature_map = c.feature_map;
  m.d_model = 32;
  m.n_head = 4;
  m.n_kv_head = c.kv_heads;
  m.d_feature = 6;
  m.chunk_size = 5;              // forward()'s chunks: C = max(5, W)
  m.max_len = c.rope ? 16 : 64;  // RoPE: past its table within kT tokens
  m.max_len = std::max(m.max_len, c.window);
  m.rope = c.rope;
  m.rope_theta = 500.0;
  m.window = c.window;
  m.decay = c.decay;
  m.gate = c.gate;
  m.validate();
  return m;
}

// Every parameter off its init, q and k sharpened (a peaked window softmax), window_factor and
// gate_bias spread over heads (gate_bias near 0 so that the key gate decays visibly).
void perturb(torch::nn::Module& m, uint64_t seed) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m.named_parameters()) {
    const auto& name = p.key();
    auto& t = p.value();
    const auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends("window_factor") || ends("gate_bias")) {
      t.copy_(torch::randn_like(t));
      continue;
    }
    t.add_(torch::randn_like(t) * 0.1);
    const bool qk = name.rfind("q.", 0) == 0 || name.rfind("k.", 0) == 0 ||
                    name.find(".q.") != std::string::npos || name.find(".k.") != std::string::npos;
    if (qk) t.mul_(3.0);
  }
}

// The twin's state of batch row 0 in the fast layout: per head S [F'][Dh] then z [F'], then the
// ring's keys, values and the log decays.
torch::Tensor twin_state(MixerState& st) {
  auto& s = dynamic_cast<HybridAttentionState&>(st);
  std::vector<torch::Tensor> parts;
  for (int64_t h = 0; h < s.S.size(1); ++h) {
    parts.push_back(s.S[0][h].flatten());
    parts.push_back(s.z[0][h].flatten());
  }
  for (auto* t : {&s.keys, &s.vals, &s.gates}) parts.push_back(t->select(0, 0).flatten());
  return torch::cat(parts);
}

// What one fast run leaves behind.
struct FastRun {
  torch::Tensor y;      // [T,D]
  torch::Tensor state;  // [state_size] after the last token
  bool guards_intact = true;
};

// Buffers with guards past their ends; scratch starts as NaN, so that reading scratch before
// writing it shows up in the output.
struct Buffers {
  std::vector<float> state, scratch;
  Buffers(int64_t S, int64_t W) : state(S + kGuard, kSentinel), scratch(W + kGuard, kSentinel) {
    std::fill(scratch.begin(), scratch.begin() + W, std::numeric_limits<float>::quiet_NaN());
  }
  FastRun result(std::vector<float>& y, int64_t T, int64_t D, int64_t S, int64_t W) const {
    FastRun r;
    for (int64_t i = 0; i < kGuard; ++i)
      r.guards_intact &= state[S + i] == kSentinel && scratch[W + i] == kSentinel;
    r.y = torch::from_blob(y.data(), {T, D}, torch::kFloat).clone();
    r.state = torch::from_blob(const_cast<float*>(state.data()), {S}, torch::kFloat).clone();
    return r;
  }
};

// step() over x [T,D].
FastRun run_steps(const infer::FastMixer& fm, const torch::Tensor& x) {
  const int64_t T = x.size(0), D = x.size(1), S = fm.state_size(), W = fm.scratch_size();
  Buffers b(S, W);
  std::vector<float> y(T * D);
  auto xc = x.contiguous();
  fm.reset(b.state.data());
  for (int64_t t = 0; t < T; ++t)
    fm.step(xc.data_ptr<float>() + t * D, y.data() + t * D, b.state.data(), b.scratch.data(), t);
  return b.result(y, T, D, S, W);
}

// prefill() over x [T,D] in consecutive pieces of the given lengths (summing to T).
FastRun run_prefill(const infer::FastMixer& fm, const torch::Tensor& x,
                    const std::vector<int64_t>& pieces) {
  const int64_t T = x.size(0), D = x.size(1), S = fm.state_size();
  const int64_t W = fm.prefill_scratch_size(*std::max_element(pieces.begin(), pieces.end()));
  Buffers b(S, W);
  std::vector<float> y(T * D);
  auto xc = x.contiguous();
  fm.reset(b.state.data());
  int64_t p = 0;
  for (int64_t n : pieces) {
    fm.prefill(xc.data_ptr<float>() + p * D, y.data() + p * D, n, D, b.state.data(),
               b.scratch.data(), p);
    p += n;
  }
  EXPECT_EQ(p, T);
  return b.result(y, T, D, S, W);
}

class FastHybridMixer : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    cfg = mixer_config(GetParam());
    torch::manual_seed(1);
    m = make_mixer(cfg);
    perturb(*m, 2);
    fm = infer::make_fast_mixer(cfg, infer::Weights(model_tensors(*m)));
    torch::manual_seed(3);
    x = torch::randn({kT, cfg.d_model});  // [T,D]
  }
  MixerConfig cfg;
  Mixer m;
  std::unique_ptr<infer::FastMixer> fm;
  torch::Tensor x;
};

}  // namespace

TEST_P(FastHybridMixer, StepEqualsTorchStepAndForwardUnderBothKernels) {
  torch::NoGradGuard ng;
  auto s = m->init_state(1);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < kT; ++t) ys.push_back(m->step(x[t].unsqueeze(0), *s).squeeze(0));
  auto ref = torch::stack(ys);                       // [T,D]
  auto par = m->forward(x.unsqueeze(0)).squeeze(0);  // [T,D] chunked
  auto* hy = dynamic_cast<HybridAttentionImpl*>(m.get());
  ASSERT_NE(hy, nullptr);
  auto quad = hy->forward_form(x.unsqueeze(0), HybridAttentionImpl::Form::quadratic).squeeze(0);
  ASSERT_TRUE(rel_close(ref, par, 1e-5, "the twin itself: step vs forward (chunked)"));
  ASSERT_TRUE(rel_close(quad, par, 1e-5, "the twin itself: quadratic vs chunked"));
  auto ref_state = twin_state(*s);
  std::vector<FastRun> runs;
  for (Kernel k : {Kernel::scalar, Kernel::avx2}) {
    if (infer::set_kernel(k) != k) continue;  // no AVX2 + FMA here: scalar only
    runs.push_back(run_steps(*fm, x));
    const auto& r = runs.back();
    const std::string kn = infer::kernel_name(k);
    EXPECT_TRUE(r.guards_intact) << kn << ": wrote past state_size() or scratch_size()";
    for (int64_t t = 0; t < kT; ++t) {
      EXPECT_TRUE(rel_close(r.y[t], ref[t], kTol, kn + ", step, token " + std::to_string(t)));
      EXPECT_TRUE(rel_close(r.y[t], par[t], kTol, kn + ", forward, token " + std::to_string(t)));
    }
    ASSERT_EQ(r.state.numel(), ref_state.numel()) << "state_size() differs from the twin's state";
    EXPECT_TRUE(rel_close(r.state, ref_state, kTol, kn + ", state after the last token"));
  }
  infer::set_kernel(Kernel::automatic);
  ASSERT_FALSE(runs.empty());
  // The sequence is not degenerate: the output moves from token to token.
  EXPECT_GT((ref[kT - 1] - ref[kT - 2]).abs().max().item<double>(), 1e-3);
}

TEST_P(FastHybridMixer, PrefillEqualsSteps) {
  auto steps = run_steps(*fm, x);
  for (const auto& pieces : std::vector<std::vector<int64_t>>{{kT}, {1, 7, 12}, {3, 3, 3, 11}}) {
    auto pre = run_prefill(*fm, x, pieces);
    const std::string what = "prefill in " + std::to_string(pieces.size()) + " pieces";
    EXPECT_TRUE(pre.guards_intact) << what << ": wrote past state or prefill_scratch_size()";
    for (int64_t t = 0; t < kT; ++t)
      EXPECT_TRUE(rel_close(pre.y[t], steps.y[t], kTol, what + ", token " + std::to_string(t)));
    EXPECT_TRUE(rel_close(pre.state, steps.state, kTol, what + ", state"));
  }
}

// Five rows at their own positions (0, 2, 5, 9, 14 tokens in), batched for 6 tokens: each row's
// output and state are bitwise those of the same token stepped alone.
TEST_P(FastHybridMixer, StepBatchRowsEqualSoloSteps) {
  const int64_t B = 5, D = cfg.d_model, S = fm->state_size();
  const std::vector<int64_t> start = {0, 2, 5, 9, 14};
  torch::manual_seed(9);
  auto xs = torch::randn({B, kT, D});  // [B,T,D] row i's sequence
  std::vector<std::vector<float>> solo(B, std::vector<float>(S)), rows;
  std::vector<float> scratch(std::max(fm->scratch_size(), fm->batch_scratch_size(B))), y(D);
  for (int64_t i = 0; i < B; ++i) {
    fm->reset(solo[i].data());
    for (int64_t t = 0; t < start[i]; ++t)
      fm->step(xs[i][t].data_ptr<float>(), y.data(), solo[i].data(), scratch.data(), t);
  }
  rows = solo;
  std::vector<float*> states(B);
  for (int64_t i = 0; i < B; ++i) states[i] = rows[i].data();
  for (int64_t r = 0; r < 6; ++r) {
    std::vector<int64_t> pos(B);
    auto X = torch::empty({B, D});  // [B,D]
    for (int64_t i = 0; i < B; ++i) {
      pos[i] = start[i] + r;
      X[i].copy_(xs[i][pos[i]]);
    }
    std::vector<float> Y(B * D);
    fm->step_batch(X.data_ptr<float>(), Y.data(), B, D, states.data(), scratch.data(), pos.data());
    for (int64_t i = 0; i < B; ++i) {
      fm->step(X[i].data_ptr<float>(), y.data(), solo[i].data(), scratch.data(), pos[i]);
      SCOPED_TRACE("row " + std::to_string(i) + " at position " + std::to_string(pos[i]));
      EXPECT_TRUE(std::equal(y.begin(), y.end(), Y.begin() + i * D)) << "output";
      EXPECT_TRUE(solo[i] == rows[i]) << "state";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FastHybridMixer,
    ::testing::Values(
        // W = 0: (gated, decayed) linear attention only.
        Case{"w0_elu1", 0, 1.0, "none", "elu1"},
        Case{"w0_decay_key_t2r_rope_gqa", 0, 0.9, "key", "t2r", 2, true},
        Case{"w0_key_hedgehog", 0, 1.0, "key", "hedgehog"},
        // W = 1: the softmax part is the token itself.
        Case{"w1_hedgehog", 1, 1.0, "none", "hedgehog"},
        Case{"w1_decay_elu1_mqa", 1, 0.9, "none", "elu1", 1},
        Case{"w3_elu1", 3, 1.0, "none", "elu1"},
        Case{"w3_decay_key_hedgehog_rope_gqa", 3, 0.9, "key", "hedgehog", 2, true},
        Case{"w3_key_t2r", 3, 1.0, "key", "t2r"},
        Case{"w8_t2r_rope_mqa", 8, 1.0, "none", "t2r", 1, true},
        Case{"w8_decay_key_hedgehog", 8, 0.9, "key", "hedgehog"},
        Case{"w8_decay_elu1_gqa", 8, 0.9, "none", "elu1", 2},
        // A window longer than the sequence: softmax attention only, nothing leaves it.
        Case{"w25_key_t2r", 25, 0.9, "key", "t2r"}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(FastHybridRefuses, ExponentialFeatureMaps) {
  // The LibTorch module refuses performer, so its weights come from a linear attention with the
  // same parameter names.
  MixerConfig lin;
  lin.arch = "linear";
  lin.feature_map = "performer";
  lin.d_model = 16;
  lin.n_head = 2;
  lin.validate();
  Mixer m = make_mixer(lin);
  auto cfg = lin;
  cfg.arch = HybridAttentionImpl::kArch;
  try {
    infer::make_fast_mixer(cfg, infer::Weights(model_tensors(*m)));
    FAIL() << "a hybrid attention with performer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("performer"), std::string::npos) << e.what();
  }
}

TEST(FastHybridRefuses, MissingOrMisshapenParametersByName) {
  auto cfg = mixer_config(Case{"x", 3, 0.9, "key", "elu1"});
  Mixer m = make_mixer(cfg);
  for (const std::string name : {"window_factor", "gate_bias"}) {
    auto t = model_tensors(*m);
    t[name] = torch::zeros({cfg.n_head + 1});
    auto missing = model_tensors(*m);
    missing.erase(name);
    for (const auto& tensors : {t, missing}) {
      try {
        infer::make_fast_mixer(cfg, infer::Weights(tensors));
        ADD_FAILURE() << name << ": accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}

namespace {

// Whole models: 2 layers of hybrid attention, an MLP, tied head.
ModelConfig model_config(const Case& c) {
  ModelConfig mc;
  mc.mixer = mixer_config(c);
  if (!c.rope) mc.mixer.max_len = 64;  // learned positions cover every token
  mc.n_layer = 2;
  mc.vocab_size = kV;
  mc.validate();
  return mc;
}

std::vector<int64_t> random_ids(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  auto t = torch::randint(0, kV, {n}, torch::kLong);
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
}

class FastHybridModel : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    m = std::make_shared<SeqModelImpl>(model_config(GetParam()));
    perturb(*m, 4);
    m->eval();
  }
  std::shared_ptr<SeqModelImpl> m;
};

}  // namespace

TEST_P(FastHybridModel, SupportedByTheFastDecoder) {
  EXPECT_EQ(infer::fast_support(*m), "");
}

TEST_P(FastHybridModel, StepAndPrefillEqualTheLibTorchModelAtEveryPosition) {
  torch::NoGradGuard ng;
  const auto ids = random_ids(kT, 5);
  auto tokens = torch::tensor(ids, torch::kLong);
  auto want = m->forward(tokens.unsqueeze(0)).squeeze(0);  // [T,V]
  auto s = m->init_state(1);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < kT; ++t) ys.push_back(m->step(tokens.narrow(0, t, 1), s)[0]);
  auto want_step = torch::stack(ys);  // [T,V]
  ASSERT_TRUE(rel_close(want_step, want, 1e-5, "SeqModel step vs forward"));
  FastModel fm(*m);
  auto st = fm.init_state();
  auto got = torch::empty({kT, kV});
  for (int64_t t = 0; t < kT; ++t) fm.step(ids[t], st, got[t].data_ptr<float>());
  std::vector<float> logits(kV);
  for (int64_t t = 0; t < kT; ++t) {
    const std::string at = ", position " + std::to_string(t);
    ASSERT_TRUE(rel_close(got[t], want[t], kTol, "fast step vs forward" + at));
    ASSERT_TRUE(rel_close(got[t], want_step[t], kTol, "fast step vs torch step" + at));
    auto pre = fm.init_state();
    fm.prefill(ids.data(), t + 1, pre, logits.data());
    ASSERT_TRUE(rel_close(torch::from_blob(logits.data(), {kV}), want[t], kTol,
                          "fast prefill vs forward" + at));
  }
}

TEST_P(FastHybridModel, StepBatchRowsEqualSoloSteps) {
  FastModel batched(*m), solo(*m);
  const int64_t B = 5;
  const auto ids = random_ids(kT, 6);
  std::vector<DecoderState> rows, alone;
  std::vector<float> logits(kV), blogits(B * kV);
  for (int64_t i = 0; i < B; ++i) {  // row i starts 3 i tokens in
    auto s = solo.init_state();
    for (int64_t t = 0; t < 3 * i; ++t) solo.step(ids[(t + i) % kT], s, logits.data());
    rows.push_back(s);
    alone.push_back(s);
  }
  std::vector<DecoderState*> ptrs;
  for (auto& r : rows) ptrs.push_back(&r);
  for (int64_t r = 0; r < 6; ++r) {
    std::vector<int64_t> next(B);
    for (int64_t i = 0; i < B; ++i) next[i] = ids[(5 * i + r) % kT];
    batched.step_batch(next.data(), ptrs.data(), B, blogits.data());
    for (int64_t i = 0; i < B; ++i) {
      solo.step(next[i], alone[i], logits.data());
      SCOPED_TRACE("row " + std::to_string(i) + ", batched step " + std::to_string(r));
      EXPECT_TRUE(std::equal(logits.begin(), logits.end(), blogits.begin() + i * kV)) << "logits";
      EXPECT_TRUE(rows[i].data == alone[i].data) << "state";
      EXPECT_EQ(rows[i].pos, alone[i].pos);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FastHybridModel,
    ::testing::Values(Case{"w0_elu1", 0, 1.0, "none", "elu1"},
                      Case{"w0_decay_key_t2r", 0, 0.9, "key", "t2r"},
                      Case{"w3_decay_key_hedgehog_rope_gqa", 3, 0.9, "key", "hedgehog", 2, true},
                      Case{"w8_elu1_rope_mqa", 8, 1.0, "none", "elu1", 1, true},
                      Case{"w1_decay_t2r", 1, 0.9, "none", "t2r"}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });
