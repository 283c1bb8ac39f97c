// The encoder-decoder (model/encdec.h): cross-attention against a plain-loop reference, decoder
// causality, encoder bidirectionality, padding masks, and the recurrent decoder against the
// teacher-forced forward.
#include "seqlab/model/encdec.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace seqlab {
namespace {

EncDecConfig small_config(const std::string& arch) {
  EncDecConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 16;
  c.mixer.n_head = 4;
  c.mixer.max_len = 12;
  c.vocab_size = 23;
  c.n_enc_layer = 2;
  c.n_dec_layer = 2;
  c.mlp_ratio = 2;
  return c;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

TEST(EncDec, CrossAttentionEqualsPlainLoops) {
  torch::manual_seed(1);
  CrossAttention ca(8, 2);
  const int64_t B = 2, T = 3, S = 5, D = 8, H = 2, Dh = 4;
  auto x = torch::randn({B, T, D}, torch::kFloat64);
  auto mem = torch::randn({B, S, D}, torch::kFloat64);
  auto valid = torch::ones({B, S}, torch::kBool);
  valid[1][3] = false;
  valid[1][4] = false;
  ca->to(torch::kFloat64);
  auto got = ca->forward(x, mem, valid);
  // Reference: per batch, head and query, scores over valid keys, softmax, weighted values.
  auto lin = [](torch::nn::Linear& l, const torch::Tensor& a) {
    return torch::matmul(a, l->weight.t()) + l->bias;
  };
  auto Q = lin(ca->q, x), K = lin(ca->k, mem), V = lin(ca->v, mem);
  auto ref_heads = torch::zeros({B, T, D}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> w(S, 0.0);
        double mx = -1e300, z = 0;
        for (int64_t s = 0; s < S; ++s) {
          if (!valid[b][s].item<bool>()) continue;
          double dot = 0;
          for (int64_t i = 0; i < Dh; ++i)
            dot += Q[b][t][h * Dh + i].item<double>() * K[b][s][h * Dh + i].item<double>();
          w[s] = dot / std::sqrt(double(Dh));
          mx = std::max(mx, w[s]);
        }
        for (int64_t s = 0; s < S; ++s) {
          w[s] = valid[b][s].item<bool>() ? std::exp(w[s] - mx) : 0.0;
          z += w[s];
        }
        for (int64_t i = 0; i < Dh; ++i) {
          double acc = 0;
          for (int64_t s = 0; s < S; ++s) acc += w[s] / z * V[b][s][h * Dh + i].item<double>();
          ref_heads[b][t][h * Dh + i] = acc;
        }
      }
  auto ref = lin(ca->o, ref_heads);
  EXPECT_LT(max_diff(got, ref), 1e-10) << "got\n" << got[1] << "\nref\n" << ref[1];
}

TEST(EncDec, DecoderIsCausalEncoderIsNot) {
  torch::manual_seed(2);
  EncDec m(small_config("softmax"));
  m->eval();
  torch::NoGradGuard ng;
  auto src = torch::randint(0, 23, {2, 7});
  auto tgt = torch::randint(0, 23, {2, 6});
  auto valid = torch::ones({2, 7}, torch::kBool);
  auto a = m->forward(src, valid, tgt);
  auto tgt2 = tgt.clone();
  tgt2.select(1, 4).fill_(0);
  tgt2.select(1, 5).fill_(1);
  auto b = m->forward(src, valid, tgt2);
  EXPECT_LT(max_diff(a.narrow(1, 0, 4), b.narrow(1, 0, 4)), 1e-6);  // positions before 4 unchanged
  EXPECT_GT(max_diff(a.narrow(1, 4, 2), b.narrow(1, 4, 2)), 1e-4);  // and the change is visible
  // The encoder sees the whole source: changing its last token changes its first state.
  auto src2 = src.clone();
  src2.select(1, 6).add_(1).remainder_(23);
  EXPECT_GT(max_diff(m->encode(src).select(1, 0), m->encode(src2).select(1, 0)), 1e-5);
  // Every decoder position reads the source.
  EXPECT_GT(max_diff(a.select(1, 0), m->forward(src2, valid, tgt).select(1, 0)), 1e-5);
}

TEST(EncDec, PaddedMemoryIsIgnoredByCrossAttention) {
  torch::manual_seed(3);
  EncDec m(small_config("softmax"));
  m->eval();
  torch::NoGradGuard ng;
  auto mem = torch::randn({2, 7, 16});
  auto valid = torch::ones({2, 7}, torch::kBool);
  valid.narrow(1, 5, 2).fill_(false);
  auto tgt = torch::randint(0, 23, {2, 4});
  auto mem2 = mem.clone();
  mem2.narrow(1, 5, 2).normal_();
  EXPECT_LT(max_diff(m->decode(tgt, mem, valid), m->decode(tgt, mem2, valid)), 1e-6);
  EXPECT_GT(max_diff(m->decode(tgt, mem, {}), m->decode(tgt, mem2, {})), 1e-5);
}

void check_step_equals_forward(const std::string& arch) {
  torch::manual_seed(4);
  EncDec m(small_config(arch));
  m->eval();
  torch::NoGradGuard ng;
  auto src = torch::randint(0, 23, {3, 9});
  auto valid = torch::ones({3, 9}, torch::kBool);
  valid[2].narrow(0, 6, 3).fill_(false);
  auto tgt = torch::randint(0, 23, {3, 8});
  auto full = m->forward(src, valid, tgt);  // [B,T,V]
  auto s = m->init_state(m->encode(src), valid);
  for (int64_t t = 0; t < 8; ++t) {
    auto lt = m->step(tgt.select(1, t), s);
    const double d = max_diff(lt, full.select(1, t));
    ASSERT_LT(d, 1e-5) << arch << " position " << t << ": step " << lt[0].narrow(0, 0, 4)
                       << " forward " << full.select(1, t)[0].narrow(0, 0, 4);
  }
}

TEST(EncDec, TeacherForcedStepEqualsForward) {
  check_step_equals_forward("softmax");
  check_step_equals_forward("linear");
}

TEST(EncDec, RefusesAMixerWithoutBidirectionalForm) {
  for (const char* arch : {"gru", "lstm", "mamba"}) {
    try {
      EncDec m(small_config(arch));
      FAIL() << arch << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bidirectional"), std::string::npos) << e.what();
    }
  }
}

TEST(EncDec, ParameterNames) {
  EncDec m(small_config("softmax"));
  std::set<std::string> names;
  for (const auto& p : m->named_parameters()) names.insert(p.key());
  for (const char* n : {"wte.weight", "enc_wpe.weight", "dec_wpe.weight", "enc.0.mixer.q.weight",
                        "dec.1.self.k.weight", "dec.1.cross.o.bias", "dec.0.ln3.weight",
                        "ln_enc.weight", "ln_dec.bias"})
    EXPECT_TRUE(names.count(n)) << n;
}

}  // namespace
}  // namespace seqlab
