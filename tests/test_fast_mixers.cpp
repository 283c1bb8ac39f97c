// The fast decoder's recurrent mixers (infer/mixers/{elman,gru,lstm,qrnn,s4d,mamba}.cpp) against
// their LibTorch twins' step(), token by token, under both matvec kernels; their state buffers
// against the twins' states (the documented layouts); no heap allocation per token; and whole
// tiny models (FastModel::step against SeqModel::forward at every position).
//
// T = tokens, D = d_model, V = vocabulary.
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"

#include "mixer_testing.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>

// Counts every operator new of the process, so a test can check that a loop allocates nothing.
// (operator new[] and the nothrow forms call this one.) GCC cannot see that the replaced new and
// delete are a malloc/free pair, hence the pragma.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<int64_t> g_news{0};
}  // namespace

void* operator new(std::size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

using namespace seqlab;
using namespace seqlab::testing;
using seqlab::infer::Kernel;

namespace {

constexpr int64_t kT = 12;
constexpr double kTol = 1e-4;   // max |fast - torch| / max |torch|, at every token
constexpr int64_t kGuard = 16;  // floats past the end of state and scratch that must stay untouched
constexpr float kSentinel = 12345.0f;

struct Case {
  std::string name, arch;
  int64_t qrnn_window = 2;
  std::string qrnn_pooling = "fo";
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

MixerConfig config_of(const Case& c) {
  auto cfg = small_config(c.arch);
  cfg.qrnn_window = c.qrnn_window;
  cfg.qrnn_pooling = c.qrnn_pooling;
  cfg.validate();
  return cfg;
}

// Moves every parameter off its structured init (S4D's B = 1 + 0i, LSTM's forget bias, ...), so
// every term of the maths is exercised.
void perturb(torch::nn::Module& m, uint64_t seed, double scale = 0.2) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m.parameters()) p.add_(torch::randn_like(p) * scale);
}

// What one fast run leaves behind.
struct FastRun {
  torch::Tensor y;      // [T,D]
  torch::Tensor state;  // [state_size] after the last token
  int64_t news = 0;     // operator new calls inside the token loop
  bool guards_intact = true;
};

FastRun run_fast(const infer::FastMixer& fm, const torch::Tensor& x) {
  const int64_t T = x.size(0), D = x.size(1);
  const int64_t S = fm.state_size(), W = fm.scratch_size();
  std::vector<float> state(S + kGuard, kSentinel);
  // Scratch starts as NaN: a mixer that reads scratch before writing it shows up in the output.
  std::vector<float> scratch(W + kGuard, std::numeric_limits<float>::quiet_NaN());
  std::fill(scratch.begin() + W, scratch.end(), kSentinel);
  std::vector<float> y(T * D, 0.0f);
  auto xc = x.contiguous();
  const float* xp = xc.data_ptr<float>();
  fm.reset(state.data());
  const int64_t before = g_news;
  for (int64_t t = 0; t < T; ++t)
    fm.step(xp + t * D, y.data() + t * D, state.data(), scratch.data(), t);
  FastRun r;
  r.news = g_news - before;
  for (int64_t i = 0; i < kGuard; ++i)
    r.guards_intact &= state[S + i] == kSentinel && scratch[W + i] == kSentinel;
  r.y = torch::from_blob(y.data(), {T, D}, torch::kFloat).clone();
  r.state = torch::from_blob(state.data(), {S}, torch::kFloat).clone();
  return r;
}

class FastMixers : public ::testing::TestWithParam<Case> {};

TEST_P(FastMixers, StepMatchesTorchStepUnderBothKernels) {
  torch::NoGradGuard ng;
  const auto cfg = config_of(GetParam());
  torch::manual_seed(1);
  Mixer m = make_mixer(cfg);
  perturb(*m, 2);
  auto fm = infer::make_fast_mixer(cfg, infer::Weights(model_tensors(*m)));

  torch::manual_seed(3);
  auto x = torch::randn({kT, cfg.d_model});  // [T,D]
  auto s = m->init_state(1);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < kT; ++t) ys.push_back(m->step(x[t].unsqueeze(0), *s).squeeze(0));
  auto ref = torch::stack(ys);  // [T,D]
  // The twin's state tensors in for_each order, flattened: the fast state's documented layout.
  std::vector<torch::Tensor> parts;
  s->for_each([&](const std::string&, torch::Tensor& t) { parts.push_back(t.flatten()); });
  auto ref_state = torch::cat(parts);

  std::vector<FastRun> runs;
  for (Kernel k : {Kernel::scalar, Kernel::avx2}) {
    const Kernel used = infer::set_kernel(k);
    if (k == Kernel::avx2 && used != Kernel::avx2) {
      std::cout << "  (this CPU has no AVX2 + FMA: only the scalar kernel is checked)\n";
      continue;
    }
    runs.push_back(run_fast(*fm, x));
    const auto& r = runs.back();
    const std::string kn = infer::kernel_name(k);
    EXPECT_EQ(r.news, 0) << kn << ": heap allocations in the token loop";
    EXPECT_TRUE(r.guards_intact) << kn << ": wrote past state_size() or scratch_size()";
    for (int64_t t = 0; t < kT; ++t)
      EXPECT_TRUE(rel_close(r.y[t], ref[t], kTol, kn + ", token " + std::to_string(t)));
    ASSERT_EQ(r.state.numel(), ref_state.numel()) << "state_size() differs from the twin's state";
    EXPECT_TRUE(rel_close(r.state, ref_state, kTol, kn + ", state after the last token"));
  }
  infer::set_kernel(Kernel::automatic);
  if (runs.size() == 2) {
    for (int64_t t = 0; t < kT; ++t)
      EXPECT_TRUE(rel_close(runs[1].y[t], runs[0].y[t], 1e-5,
                            "avx2 vs scalar, token " + std::to_string(t)));
  }
}

TEST_P(FastMixers, ResetRestartsTheSequence) {
  torch::NoGradGuard ng;
  const auto cfg = config_of(GetParam());
  torch::manual_seed(4);
  Mixer m = make_mixer(cfg);
  auto fm = infer::make_fast_mixer(cfg, infer::Weights(model_tensors(*m)));
  auto x = torch::randn({kT, cfg.d_model});
  auto a = run_fast(*fm, x), b = run_fast(*fm, x);
  EXPECT_TRUE(torch::equal(a.y, b.y));
}

INSTANTIATE_TEST_SUITE_P(All, FastMixers,
                         ::testing::Values(Case{"elman", "elman"}, Case{"gru", "gru"},
                                           Case{"lstm", "lstm"}, Case{"qrnn_w1_f", "qrnn", 1, "f"},
                                           Case{"qrnn_w1_fo", "qrnn", 1, "fo"},
                                           Case{"qrnn_w2_f", "qrnn", 2, "f"},
                                           Case{"qrnn_w2_fo", "qrnn", 2, "fo"}, Case{"s4d", "s4d"},
                                           Case{"mamba", "mamba"}),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// The allocation check above is not vacuous: the replaced operator new does see allocations.
TEST(FastMixers, AllocationCounterCounts) {
  const int64_t before = g_news;
  auto v = std::make_unique<std::vector<float>>(10);
  EXPECT_GE(g_news - before, 2) << "operator new is not the test's replacement";
}

TEST(FastMixers, WrongShapeIsAnErrorNamingTheTensor) {
  auto cfg = small_config("gru");
  Mixer m = make_mixer(cfg);
  auto t = model_tensors(*m);
  t["w_hh.weight"] = torch::zeros({cfg.d_model, cfg.d_model});
  try {
    infer::make_fast_mixer(cfg, infer::Weights(t));
    FAIL() << "expected seqlab::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w_hh.weight"), std::string::npos) << e.what();
  }
}

class FastModels : public ::testing::TestWithParam<std::string> {};

// A whole tiny lm (2 layers, MLP, tied head): FastModel::step equals SeqModel::forward's logits at
// every position.
TEST_P(FastModels, StepMatchesForward) {
  torch::NoGradGuard ng;
  ModelConfig c;
  c.mixer = small_config(GetParam());
  c.n_layer = 2;
  c.vocab_size = 11;
  c.head = "lm";
  c.validate();
  torch::manual_seed(5);
  SeqModel model(c);
  perturb(*model, 6, 0.1);
  model->eval();
  auto tokens = torch::randint(0, c.vocab_size, {1, kT}, torch::kLong);
  auto ref = model->forward(tokens)[0];  // [T,V]

  infer::FastModel fm(*model);
  auto st = fm.init_state();
  std::vector<float> logits(c.vocab_size);
  for (int64_t t = 0; t < kT; ++t) {
    fm.step(tokens[0][t].item<int64_t>(), st, logits.data());
    auto got = torch::from_blob(logits.data(), {c.vocab_size}, torch::kFloat);
    EXPECT_TRUE(rel_close(got, ref[t], kTol, "logits at position " + std::to_string(t)));
  }
}

INSTANTIATE_TEST_SUITE_P(All, FastModels,
                         ::testing::Values("elman", "gru", "lstm", "qrnn", "s4d", "mamba"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
