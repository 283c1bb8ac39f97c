// The fast decoder's short convolution (linear attention with --short-conv K, as `convert
// --short-conv` and the MQAR grid's ELU+1 + short conv build it) against the LibTorch model: the
// logits at every position, with RoPE and grouped-query attention too; chunked prefill against
// stepping (the state's convolution tail carried across chunks); and the server's batched step
// against each row stepped alone. The kernels are drawn at random, not the identity, so a tap read
// from the wrong token (or a tail shifted the wrong way) changes the output.
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/model/model.h"

#include "mixer_testing.h"

#include <vector>

using namespace seqlab;
using namespace seqlab::testing;
using seqlab::infer::DecoderState;
using seqlab::infer::FastModel;

namespace {

constexpr int64_t kV = 29;

ModelConfig conv_config(const std::string& map, int64_t short_conv, bool llama) {
  ModelConfig c;
  c.mixer.arch = map;
  c.mixer.d_model = 32;
  c.mixer.n_head = 4;
  c.mixer.d_feature = 6;
  c.mixer.max_len = 160;
  c.mixer.short_conv = short_conv;
  c.n_layer = 2;
  c.mlp_ratio = 2;
  c.vocab_size = kV;
  if (llama) {
    c.mixer.rope = true;
    c.mixer.n_kv_head = 2;
    c.norm = "rms";
    c.mlp = "swiglu";
    c.d_mlp = 40;
  }
  c.validate();
  return c;
}

// A model whose kernels are random and larger than the identity's single tap.
SeqModelImpl& randomise_kernels(SeqModelImpl& m) {
  torch::NoGradGuard ng;
  int64_t kernels = 0;
  for (auto& p : m.named_parameters())
    if (p.key().find("mixer.conv.weight") != std::string::npos) {
      p.value().normal_(0.0, 0.7);
      kernels += 1;
    }
  EXPECT_EQ(kernels, m.config().n_layer);
  m.eval();
  return m;
}

torch::Tensor logits_of(std::vector<float>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())});
}

torch::Tensor state_of(DecoderState& s) {
  return torch::from_blob(s.data.data(), {static_cast<int64_t>(s.data.size())});
}

}  // namespace

TEST(FastShortConv, EqualsTheLibTorchModelAtEveryPosition) {
  for (const char* map : {"elu1", "hedgehog", "t2r", "performer"})
    for (int64_t K : {1, 2, 4})
      for (bool llama : {false, true}) {
        SCOPED_TRACE(std::string(map) + " K=" + std::to_string(K) + (llama ? " llama" : ""));
        torch::manual_seed(17);
        SeqModelImpl m(conv_config(map, K, llama));
        randomise_kernels(m);
        torch::NoGradGuard ng;
        auto tokens = torch::randint(0, kV, {1, 20}, torch::kLong);
        auto want = m.forward(tokens).squeeze(0);  // [T,V]
        FastModel fm(m);
        auto s = fm.init_state();
        std::vector<float> out(kV);
        for (int64_t t = 0; t < 20; ++t) {
          fm.step(tokens[0][t].item<int64_t>(), s, out.data());
          EXPECT_TRUE(rel_close(logits_of(out), want[t], 1e-4, "position " + std::to_string(t)));
        }
      }
}

// A prompt longer than one prefill chunk (64 tokens): the tail crosses the chunk boundaries.
TEST(FastShortConv, ChunkedPrefillEqualsStepping) {
  for (const char* map : {"elu1", "hedgehog"}) {
    SCOPED_TRACE(map);
    torch::manual_seed(23);
    SeqModelImpl m(conv_config(map, 4, true));
    randomise_kernels(m);
    FastModel fm(m);
    const int64_t n = 150;
    auto tokens = torch::randint(0, kV, {n}, torch::kLong);
    std::vector<int64_t> ids(tokens.data_ptr<int64_t>(), tokens.data_ptr<int64_t>() + n);
    auto a = fm.init_state(), b = fm.init_state();
    std::vector<float> la(kV), lb(kV);
    fm.prefill(ids.data(), n, a, la.data());
    for (int64_t i = 0; i < n; ++i) fm.step(ids[i], b, lb.data());
    EXPECT_TRUE(rel_close(logits_of(la), logits_of(lb), 1e-5, "prefill vs step"));
    EXPECT_TRUE(rel_close(state_of(a), state_of(b), 1e-4, "state after prefill vs step"));
    torch::NoGradGuard ng;
    auto want = m.forward(tokens.unsqueeze(0)).select(1, n - 1).squeeze(0);
    EXPECT_TRUE(rel_close(logits_of(la), want, 1e-4, "prefill vs LibTorch"));
  }
}

// Rows at different positions, each with its own tail: every row equals its solo step bitwise.
TEST(FastShortConv, BatchedStepEqualsEachRowAlone) {
  torch::manual_seed(29);
  SeqModelImpl m(conv_config("hedgehog", 4, false));
  randomise_kernels(m);
  FastModel solo(m), batched(m);
  constexpr int64_t B = 3;
  std::vector<DecoderState> a, b;
  for (int64_t i = 0; i < B; ++i) {
    a.push_back(solo.init_state());
    b.push_back(batched.init_state());
  }
  std::vector<float> want(kV), got(B * kV);
  // Row i starts i + 1 tokens in, so the rows' tails hold different tokens.
  for (int64_t i = 0; i < B; ++i)
    for (int64_t t = 0; t <= i; ++t) {
      solo.step((3 * t + i) % kV, a[i], want.data());
      batched.step((3 * t + i) % kV, b[i], want.data());
    }
  std::vector<DecoderState*> ptrs;
  for (auto& s : b) ptrs.push_back(&s);
  for (int64_t step = 0; step < 8; ++step) {
    std::vector<int64_t> next(B);
    for (int64_t i = 0; i < B; ++i) next[i] = (5 * step + 7 * i + 1) % kV;
    batched.step_batch(next.data(), ptrs.data(), B, got.data());
    for (int64_t i = 0; i < B; ++i) {
      solo.step(next[i], a[i], want.data());
      for (int64_t v = 0; v < kV; ++v)
        ASSERT_EQ(got[i * kV + v], want[v]) << "step " << step << " row " << i << " logit " << v;
      ASSERT_EQ(a[i].data, b[i].data) << "step " << step << " row " << i;
    }
  }
}
