// The fast decoder on pretrained-family layouts (issue 32): RMSNorm and LayerNorm with its eps,
// SwiGLU and plain MLPs of any width with or without biases, parallel residual, q/k/v/o biases on
// or off, grouped-query attention and rotary position embeddings in the softmax and linear
// attention mixers, untied heads. Every case runs FastModel::step and FastModel::prefill against
// SeqModel::forward and SeqModel::step at every position of a 40-token sequence (linear attention
// past its RoPE table, prefill past a chunk boundary), under both kernels, and round-trips the
// decoder state through a file. The new kernels (rms_norm, silu_mul, layer_norm's eps) and the
// RoPE tables are checked against float64 and LibTorch references.
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/fast_rope.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/infer/roofline.h"
#include "seqlab/mixers/rope.h"
#include "seqlab/model/model.h"

#include "mixer_testing.h"

#include <unistd.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;
using seqlab::infer::DecoderState;
using seqlab::infer::FastModel;
using seqlab::infer::Kernel;

namespace {

constexpr int64_t kT = 40;     // tokens compared at every position
constexpr double kTol = 1e-4;  // max |fast - torch| / max |torch|, as tests/test_fast_decoder.cpp
constexpr int64_t kV = 29;
constexpr int64_t kLong = FastModel::kPrefillChunk + 6;  // one prefill call over two chunks

struct Case {
  std::string name, arch;
  int64_t kv_heads = 0;  // n_kv_head
  bool rope = true;
  double rope_fraction = 1.0;
  std::string norm = "rms";
  double norm_eps = 1e-6;
  std::string mlp = "swiglu";
  int64_t d_mlp = 40;
  bool biases = false;  // qkv_bias, o_bias, mlp_bias
  bool parallel = false;
  bool tied = false;
  int64_t max_len = 80;  // linear attention: below kT, so that RoPE runs past its table
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

ModelConfig config_of(const Case& k) {
  ModelConfig c;
  c.mixer.arch = k.arch;
  c.mixer.d_model = 32;
  c.mixer.n_head = 4;
  c.mixer.n_kv_head = k.kv_heads;
  c.mixer.d_feature = 6;
  c.mixer.max_len = k.max_len;
  c.mixer.rope = k.rope;
  c.mixer.rope_theta = 500.0;
  c.mixer.rope_fraction = k.rope_fraction;
  c.mixer.qkv_bias = k.biases;
  c.mixer.o_bias = k.biases;
  c.n_layer = 2;
  c.vocab_size = kV;
  c.norm = k.norm;
  c.norm_eps = k.norm_eps;
  c.mlp = k.mlp;
  c.d_mlp = k.d_mlp;
  c.mlp_bias = k.biases;
  c.parallel_residual = k.parallel;
  c.tie_embeddings = k.tied;
  c.validate();
  return c;
}

// The case's model in eval mode, every parameter moved off its init (norm weights 1, biases 0)
// and attention sharpened.
std::shared_ptr<SeqModelImpl> model_of(const Case& k, uint64_t seed) {
  auto m = std::make_shared<SeqModelImpl>(config_of(k));
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m->named_parameters()) {
    p.value().add_(torch::randn_like(p.value()) * 0.1);
    if (p.key().find("mixer.q.") != std::string::npos ||
        p.key().find("mixer.k.") != std::string::npos)
      p.value().mul_(3.0);
  }
  m->eval();
  return m;
}

torch::Tensor random_tokens(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(0, kV, {n}, torch::kLong);
}

double rel_error(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

torch::Tensor fast_steps(FastModel& fm, const std::vector<int64_t>& ids, DecoderState& s) {
  auto out = torch::empty({static_cast<int64_t>(ids.size()), fm.vocab_size()});
  for (size_t t = 0; t < ids.size(); ++t) fm.step(ids[t], s, out[t].data_ptr<float>());
  return out;
}

// SeqModel::step over tokens [T]: logits [T,V].
torch::Tensor torch_steps(SeqModelImpl& m, const torch::Tensor& tokens) {
  auto s = m.init_state(1);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < tokens.size(0); ++t) ys.push_back(m.step(tokens.narrow(0, t, 1), s)[0]);
  return torch::stack(ys);
}

std::vector<int64_t> ids_of(const torch::Tensor& tokens) {
  return std::vector<int64_t>(tokens.data_ptr<int64_t>(),
                              tokens.data_ptr<int64_t>() + tokens.numel());
}

class FastFamilies : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(FastFamilies, SupportedByTheFastDecoder) {
  EXPECT_EQ(infer::fast_support(config_of(GetParam())), "");
}

TEST_P(FastFamilies, StepEqualsTheLibTorchModelAtEveryPosition) {
  auto m = model_of(GetParam(), 3);
  torch::NoGradGuard ng;
  auto tokens = random_tokens(kT, 4);
  auto want = m->forward(tokens.unsqueeze(0)).squeeze(0);  // [T,V]
  auto want_step = torch_steps(*m, tokens);                // [T,V]
  ASSERT_LE(rel_error(want_step, want), 1e-5);
  for (Kernel kern : {Kernel::scalar, Kernel::avx2}) {
    infer::set_kernel(kern);
    FastModel fm(*m);
    auto s = fm.init_state();
    auto got = fast_steps(fm, ids_of(tokens), s);
    EXPECT_LE(rel_error(got, want), kTol) << infer::kernel_name(kern);
    EXPECT_LE(rel_error(got, want_step), kTol) << infer::kernel_name(kern);
    for (int64_t t = 0; t < kT; ++t)  // every position on its own, not only the worst
      ASSERT_LE(rel_error(got[t], want[t]), kTol) << infer::kernel_name(kern) << " position " << t;
    EXPECT_EQ(s.pos, kT);
  }
  infer::set_kernel(Kernel::automatic);
}

// Prefill of the first t tokens, for every t, gives the forward's logits at t - 1; a prefill in
// pieces leaves the state stepping leaves; one prefill longer than a chunk (64) agrees too.
TEST_P(FastFamilies, PrefillEqualsTheLibTorchModelAtEveryPosition) {
  auto m = model_of(GetParam(), 5);
  torch::NoGradGuard ng;
  auto tokens = random_tokens(kLong, 6);
  const auto ids = ids_of(tokens);
  auto want = m->forward(tokens.unsqueeze(0)).squeeze(0);  // [kLong,V]
  FastModel fm(*m);
  std::vector<float> logits(kV);
  for (int64_t t = 1; t <= kT; ++t) {
    auto s = fm.init_state();
    fm.prefill(ids.data(), t, s, logits.data());
    ASSERT_EQ(s.pos, t);
    ASSERT_LE(rel_error(torch::from_blob(logits.data(), {kV}), want[t - 1]), kTol) << "t " << t;
  }
  // Pieces 1, 12, 27: the state equals the one stepping leaves.
  auto a = fm.init_state(), b = fm.init_state();
  fm.prefill(ids.data(), 1, a, nullptr);
  fm.prefill(ids.data() + 1, 12, a, nullptr);
  fm.prefill(ids.data() + 13, kT - 13, a, logits.data());
  fast_steps(fm, std::vector<int64_t>(ids.begin(), ids.begin() + kT), b);
  EXPECT_EQ(a.pos, kT);
  auto sa = torch::from_blob(a.data.data(), {static_cast<int64_t>(a.data.size())});
  auto sb = torch::from_blob(b.data.data(), {static_cast<int64_t>(b.data.size())});
  EXPECT_LE((sa - sb).abs().max().item<double>(), 1e-4 * (1 + sb.abs().max().item<double>()));
  // One call over more than a chunk (64 + 6 tokens).
  auto c = fm.init_state();
  fm.prefill(ids.data(), kLong, c, logits.data());
  EXPECT_LE(rel_error(torch::from_blob(logits.data(), {kV}), want[kLong - 1]), kTol);
}

TEST_P(FastFamilies, StateRoundTripsThroughAFile) {
  auto m = model_of(GetParam(), 7);
  FastModel fm(*m);
  const auto ids = ids_of(random_tokens(kT, 8));
  auto s = fm.init_state();
  auto whole = fast_steps(fm, ids, s);
  auto a = fm.init_state();
  fast_steps(fm, std::vector<int64_t>(ids.begin(), ids.begin() + 17), a);
  const auto path = (std::filesystem::temp_directory_path() /
                     ("seqlab_fast_families." + std::to_string(getpid()) + ".safetensors"))
                        .string();
  fm.save_state(path, a);
  auto loaded = fm.load_state(path);
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.pos, 17);
  const std::vector<int64_t> rest(ids.begin() + 17, ids.end());
  EXPECT_TRUE(torch::equal(fast_steps(fm, rest, loaded), whole.narrow(0, 17, kT - 17)));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, FastFamilies,
    ::testing::Values(
        // Llama / Mistral: RoPE, GQA, RMSNorm, SwiGLU, no biases, untied head.
        Case{"llama_softmax", "softmax", 2},
        // Multi-query (one kv head), biases everywhere, a narrow SwiGLU, tied head.
        Case{"mqa_softmax_biases", "softmax", 1, true, 1.0, "rms", 1e-6, "swiglu", 24, true, false,
             true},
        // GPT-NeoX: LayerNorm eps 1e-5, partial rotary 0.25, parallel residual, biases, plain
        // GELU MLP of its own width, untied head.
        Case{"neox_softmax", "softmax", 0, true, 0.25, "layer", 1e-5, "plain", 48, true, true},
        // LayerNorm with a large eps, no RoPE (learned positions), GQA, sequential, tied.
        Case{"layer_eps_gqa_softmax", "softmax", 2, false, 1.0, "layer", 1e-2, "plain", 40, false,
             false, true},
        // Linear-attention conversions of those layouts: RoPE + GQA, past the RoPE table.
        Case{"llama_t2r", "t2r", 2, true, 1.0, "rms", 1e-6, "swiglu", 40, false, false, false, 24},
        Case{"llama_hedgehog", "hedgehog", 2, true, 1.0, "rms", 1e-6, "swiglu", 40, false, false,
             false, 24},
        Case{"llama_elu1", "elu1", 1, true, 1.0, "rms", 1e-6, "swiglu", 40, false, false, false,
             24},
        Case{"neox_hedgehog", "hedgehog", 2, true, 0.25, "layer", 1e-5, "plain", 48, true, true,
             false, 24},
        Case{"neox_performer", "performer", 0, true, 0.5, "layer", 1e-5, "plain", 48, true, true,
             false, 24}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// The fields the fast decoder does not implement are still refused by name.
TEST(FastFamilySupport, RefusesWhatItStillCannotRun) {
  auto c = config_of(Case{"x", "softmax", 2});
  c.mixer.mae = true;
  EXPECT_NE(infer::fast_support(c), "");
}

// Grouped-query attention caches G kv heads: the state is G / H of the full cache, and the
// roofline counts those bytes.
TEST(FastFamilySupport, GqaShrinksTheCacheAndTheRooflineCountsIt) {
  auto full = config_of(Case{"x", "softmax", 0});
  auto gqa = config_of(Case{"x", "softmax", 1});
  SeqModelImpl mf(full), mg(gqa);
  FastModel ff(mf), fg(mg);
  EXPECT_EQ(ff.state_size(), 2 * 2 * 80 * 32);  // layers x (K, V) x max_len x D
  EXPECT_EQ(fg.state_size(), 2 * 2 * 80 * 8);   // one kv head of 8
  EXPECT_EQ(infer::token_cost(mf, 9).state_bytes, 4 * 2 * 10 * 32 * 2);
  EXPECT_EQ(infer::token_cost(mg, 9).state_bytes, 4 * 2 * 10 * 8 * 2);
  EXPECT_EQ(infer::token_cost(mf, 9).flops - infer::token_cost(mg, 9).flops,
            2 * 2 * 2 * (32 * 32 - 8 * 32));  // k and v projections only: scores are per query
}

TEST(FastFamilyKernels, RmsNormSiluMulAndLayerNormEpsMatchFloat64) {
  torch::manual_seed(3);
  for (int64_t n : {1, 7, 8, 13, 256, 1027}) {
    for (double scale : {1e-3, 1.0, 30.0}) {
      auto x = (torch::randn({n}) * scale).contiguous();
      auto u = torch::randn({n}).contiguous();
      if (n > 8) x[3] = 0.0f, x[4] = -200.0f, x[5] = 200.0f;
      const auto xd = x.to(torch::kDouble), ud = u.to(torch::kDouble);
      const auto g = torch::randn({n}), b = torch::randn({n});
      const auto gd = g.to(torch::kDouble);
      const auto ref_rms = xd / torch::sqrt(xd.pow(2).mean() + 1e-6) * gd;
      const auto ref_ln =
          (xd - xd.mean()) / torch::sqrt(xd.var(0, false) + 1e-2) * gd + b.to(torch::kDouble);
      const auto ref_silu = xd * torch::sigmoid(xd) * ud;
      for (auto k : {Kernel::scalar, Kernel::avx2}) {
        infer::set_kernel(k);
        auto y = torch::empty({n}), l = torch::empty({n}), sm = torch::empty({n});
        infer::rms_norm(x.data_ptr<float>(), g.data_ptr<float>(), y.data_ptr<float>(), n, 1e-6);
        infer::layer_norm(x.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(),
                          l.data_ptr<float>(), n, 1e-2);
        infer::silu_mul(x.data_ptr<float>(), u.data_ptr<float>(), sm.data_ptr<float>(), n);
        const auto tag = std::string(infer::kernel_name(k)) + " n " + std::to_string(n) +
                         " scale " + std::to_string(scale);
        EXPECT_LE((y - ref_rms).abs().max().item<double>(),
                  2e-6 * ref_rms.abs().max().item<double>() + 1e-30)
            << tag;
        if (n > 1)
          EXPECT_LE((l - ref_ln).abs().max().item<double>(),
                    2e-5 * ref_ln.abs().max().item<double>())
              << tag;
        // Element by element: 1e-6 of each value (absolute below 1).
        EXPECT_TRUE(
            ((sm - ref_silu).abs() <= 1e-6 * ref_silu.abs().clamp_min(1.0)).all().item<bool>())
            << tag;
        // In place gives the same values.
        auto inplace = x.clone();
        infer::silu_mul(inplace.data_ptr<float>(), u.data_ptr<float>(), inplace.data_ptr<float>(),
                        n);
        EXPECT_TRUE(torch::equal(inplace, sm)) << tag;
      }
    }
  }
  infer::set_kernel(Kernel::automatic);
  // Non-finite inputs stay non-finite.
  for (auto k : {Kernel::scalar, Kernel::avx2}) {
    infer::set_kernel(k);
    float v[8] = {NAN, 1, 2, 3, 4, 5, 6, 7}, w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    infer::silu_mul(v, w, v, 8);
    EXPECT_TRUE(std::isnan(v[0])) << infer::kernel_name(k);
  }
  infer::set_kernel(Kernel::automatic);
}

// Mamba's selective-scan channel: h <- exp(dl a) h + du B, returns h . C, for state sizes with and
// without a tail past the 8-lane blocks, and decays from ~1 to underflow.
TEST(FastFamilyKernels, ScanChannelMatchesFloat64) {
  torch::manual_seed(11);
  for (int64_t N : {1, 5, 8, 16, 19, 64}) {
    for (float dl : {1e-3f, 0.5f, 40.0f}) {
      const auto a = -torch::rand({N}) * 4 - 0.01, B = torch::randn({N}), C = torch::randn({N});
      const auto h0 = torch::randn({N}) * 3;
      const float du = 0.7f;
      const auto ad = a.to(torch::kDouble), hd = h0.to(torch::kDouble);
      const auto ref_h = torch::exp(dl * ad) * hd + du * B.to(torch::kDouble);
      const double ref_y = (ref_h * C.to(torch::kDouble)).sum().item<double>();
      const double scale = (ref_h * C.to(torch::kDouble)).abs().sum().item<double>();
      for (auto k : {Kernel::scalar, Kernel::avx2}) {
        infer::set_kernel(k);
        auto h = h0.clone();
        const float y = infer::scan_channel(a.data_ptr<float>(), dl, du, B.data_ptr<float>(),
                                            C.data_ptr<float>(), h.data_ptr<float>(), N);
        const auto tag = std::string(infer::kernel_name(k)) + " N " + std::to_string(N) + " dl " +
                         std::to_string(dl);
        EXPECT_TRUE(((h - ref_h).abs() <= 1e-6 * ref_h.abs().clamp_min(1.0)).all().item<bool>())
            << tag;
        EXPECT_NEAR(y, ref_y, 1e-6 * scale + 1e-30) << tag;
      }
    }
  }
  infer::set_kernel(Kernel::automatic);
}

TEST(FastFamilyKernels, RopeRotateMatchesFloat64) {
  torch::manual_seed(5);
  for (int64_t half : {1, 4, 8, 13, 32, 64}) {
    auto x = torch::randn({2 * half}) * 3, a = torch::rand({half}) * 100;
    auto cos = a.cos(), sin = a.sin();
    const auto xd = x.to(torch::kDouble), cd = cos.to(torch::kDouble), sd = sin.to(torch::kDouble);
    auto x1 = xd.narrow(0, 0, half), x2 = xd.narrow(0, half, half);
    auto ref = torch::cat({x1 * cd - x2 * sd, x2 * cd + x1 * sd});
    for (auto k : {Kernel::scalar, Kernel::avx2}) {
      infer::set_kernel(k);
      auto y = x.clone();
      infer::rope_rotate(y.data_ptr<float>(), cos.data_ptr<float>(), sin.data_ptr<float>(), half);
      EXPECT_LE((y - ref).abs().max().item<double>(), 1e-6 * ref.abs().max().item<double>())
          << infer::kernel_name(k) << " half " << half;
    }
  }
  infer::set_kernel(Kernel::automatic);
}

// The fast RoPE rows are rope_tables' values inside the table and agree with them past it, and
// rotating a head equals apply_rope.
TEST(FastFamilyRope, TablesAndRotationEqualLibTorch) {
  for (double fraction : {1.0, 0.25}) {
    MixerConfig c = small_config("softmax");
    c.d_model = 32;
    c.n_head = 2;
    c.rope = true;
    c.rope_theta = 10000.0;
    c.rope_fraction = fraction;
    c.validate();
    const int64_t R = c.rope_dims(), Dh = c.d_head(), L = 16;
    infer::FastRope rope(c, L);
    ASSERT_EQ(rope.dims(), R);
    auto [cos, sin] = rope_tables(c, 0, 3000);  // [3000,R]
    for (int64_t p0 : {0, 5, 14, 16, 40, 2999}) {
      const int64_t n = std::min<int64_t>(3, 3000 - p0);
      const float* rows = rope.rows(p0, n);
      auto got = torch::from_blob(const_cast<float*>(rows), {n, R}).clone();
      auto want = torch::cat(
          {cos.narrow(0, p0, n).narrow(1, 0, R / 2), sin.narrow(0, p0, n).narrow(1, 0, R / 2)}, 1);
      if (p0 + n <= L)
        EXPECT_TRUE(torch::equal(got, want)) << "p0 " << p0;
      else
        EXPECT_LE((got - want).abs().max().item<double>(), 1e-6) << "p0 " << p0;
      // x [1,H,n,Dh] rotated head by head equals apply_rope.
      torch::manual_seed(p0);
      auto x = torch::randn({1, 2, n, Dh});
      // [1,n,H,Dh]: a token's heads together (a copy: for n = 1 the permute is x's own layout)
      auto y = x.permute({0, 2, 1, 3}).clone(torch::MemoryFormat::Contiguous);
      for (int64_t t = 0; t < n; ++t)
        rope.rotate(y.data_ptr<float>() + t * 2 * Dh, 2, Dh, rows + t * R);
      EXPECT_LE((y.permute({0, 2, 1, 3}) - apply_rope(c, x, p0)).abs().max().item<double>(), 1e-5)
          << "fraction " << fraction << " p0 " << p0;
    }
  }
}
