// Hybrid attention: exact softmax over a sliding window of the last W tokens, (gated) linear
// attention over every older token, under one normaliser (LoLCATs, Zhang et al. 2024, eq. 6;
// with decay as in RetNet / GLA and a key-derived gate after Liger, Lan et al. 2025).
//
// Per query head h, query t, window keys Win(t) = {j : t - W < j <= t}, older keys j <= t - W:
//
//   s_tj = q_t.k_j / sqrt(Dh)                  m_t = max_{j in Win(t)} s_tj
//   a_tj = f_h exp(s_tj - m_t)                                   j in Win(t)   (softmax part)
//   a_tj = (1 - f_h) exp(b_t - b_j) phi(q_t).phi(k_j)           j <= t - W    (linear part)
//   y_t  = sum_j a_tj v_j / (sum_j a_tj + eps),   eps = 1e-6
//
// f_h = sigmoid(window_factor_h), a learned scalar per head (initialised to 0: f = 1/2), as
// LoLCATs mixes the two parts. The max m_t is over the window's scores, in every form, so all
// forms compute the same function (LoLCATs' own definition, which makes the mixture depend on
// it). With W = 0 there is no softmax part and f is not used: the mixer is (gated) linear
// attention, y_t = sum_{j<=t} exp(b_t - b_j) phi(q_t).phi(k_j) v_j / (sum ... + eps).
//
// Decay: b_t = sum_{i<=t} g_i, the cumulative log decay, with g_t,h <= 0 the log decay of step t:
//   g_t,h = log(decay)                                                  (--gate none)
//   g_t,h = log(decay) + logsigmoid(mean_d k_t,g(h),d + gate_bias_h) / 16 (--gate key)
// The key gate is computed from the pretrained key projection (before RoPE), pooled over the
// head's dims, as Liger builds its gates from existing projections; gate_bias_h is learned and
// starts at 4 (a decay of about 0.9989 per token). 16 is GLA's gate-logit normaliser. The window
// part is never decayed: it is exact softmax attention.
//
// Three exact forms, selectable with forward_form():
//   quadratic  full [T,T] scores with the two masks and exp(b_t - b_j)                 O(T^2)
//   chunked    chunks of C = max(chunk_size, W): each query chunk sees the band of its own and
//              the previous chunk quadratically (both masks), and a state (S, z) of every key
//              before the band, decayed to the band's start                             O(T C)
//   recurrent  the step() recurrence over t                                            O(T W)
// forward() uses chunked. Causal only. Feature maps with running offsets (performer) are
// refused: the mixture needs phi's true scale.
//
// Recurrent state, constant in the context: a ring buffer of the last W keys (after RoPE) and
// values per kv head and the log decays of those tokens per query head, and the linear state of
// the keys that have left the window. Token j sits in slot j % W. When token t arrives (t >= W),
// token t - W leaves the window and enters S with its decay since: exp(sum of the log decays
// of tokens t-W+1 .. t), the slots' decays after writing t. Sum and product orders are fixed, so
// step() equals forward() within fp32 rounding.
//
// Grouped-query attention: G kv heads in the ring, repeated to the H query heads; the linear state
// is per query head (the key maps are per head). All attention arithmetic is fp32.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"
#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct HybridAttentionState : MixerStateBase<HybridAttentionState> {
  torch::Tensor S;      // [B,H,F,Dh] fp32: sum over keys that left the window, decayed to now
  torch::Tensor z;      // [B,H,F]    fp32: the matching sum of phi(k_j)
  torch::Tensor keys;   // [B,G,W,Dh] fp32: the window's keys after RoPE (slot j % W)
  torch::Tensor vals;   // [B,G,W,Dh] fp32: the window's values
  torch::Tensor gates;  // [B,H,W]    fp32: the window tokens' log decays g_j (0 when unused)
  torch::Tensor pos;    // [] int64 on CPU: tokens consumed
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("S", S);
    f("z", z);
    f("keys", keys);
    f("vals", vals);
    f("gates", gates);
    f("pos", pos);
  }
};

class HybridAttentionImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "hybrid";  // --arch, written only here
  enum class Form { quadratic, chunked, recurrent };
  static constexpr double kEps = 1e-6;          // added to every normaliser
  static constexpr double kGateNorm = 16.0;     // GLA's gate-logit normaliser
  static constexpr double kGateBiasInit = 4.0;  // gate_bias_h at construction

  explicit HybridAttentionImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor forward_form(const torch::Tensor& x, Form form);
  // The weights a_tj / (sum_j a_tj + eps) of the quadratic form: x [B,T,D] -> [B,H,T,T] (0 above
  // the diagonal). Hedgehog's attention transfer matches these to the teacher's softmax weights.
  torch::Tensor attention_weights(const torch::Tensor& x);
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;
  bool needs_positions() const override { return true; }

  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};  // as linear attention's
  FeatureMap feature_map;                                            // [B,H,T,Dh] -> [B,H,T,F]
  torch::Tensor window_factor;  // [H] (W > 0 only): f_h = sigmoid(window_factor_h)
  torch::Tensor gate_bias;      // [H] (--gate key only)

 private:
  struct Inputs {
    torch::Tensor q, k;    // [B,H,T,Dh] fp32, after RoPE (k repeated to H heads)
    torch::Tensor fq, fk;  // [B,H,T,F] phi(q), phi(k)
    torch::Tensor v;       // [B,H,T,Dh] fp32
    torch::Tensor kg, vg;  // [B,G,T,Dh] fp32: keys (after RoPE) and values per kv head
    torch::Tensor g;       // [B,H,T] log decays g_t (zeros without decay)
  };
  Inputs prepare(const torch::Tensor& x, int64_t p0 = 0);
  torch::Tensor log_decay(const torch::Tensor& k_raw);  // [B,G,T,Dh] pre-RoPE -> [B,H,T]
  torch::Tensor factor() const;                         // [H,1,1] f_h, or undefined when W = 0
  torch::Tensor weights(const Inputs& in);              // [B,H,T,T] unnormalised a_tj
  torch::Tensor quadratic(const Inputs& in);            // -> [B,H,T,Dh]
  torch::Tensor chunked(const Inputs& in);              // -> [B,H,T,Dh]
  // One recurrence step on token t of `in`, at absolute position p: advances s -> [B,H,Dh].
  torch::Tensor recur(const Inputs& in, int64_t t, int64_t p, HybridAttentionState& s);
  torch::Tensor phi_keys(const torch::Tensor& kg);  // [B,G,n,Dh] -> phi [B,H,n,F]
  torch::Tensor merge_heads(const torch::Tensor& y, const torch::Tensor& x);  // -> o(...) [B,T,D]
};

}  // namespace seqlab
