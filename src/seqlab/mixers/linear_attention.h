// Causal linear attention, "Transformers are RNNs" (Katharopoulos et al. 2020, eq. 6, 16-20):
//
//   y_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps * rho_t),   S_t = sum_{j<=t} phi(k_j) v_j^T,
//                                                            z_t = sum_{j<=t} phi(k_j)
//
// per head, then o(concat heads), with eps = 1e-6. The normalizer rule, the same in every form:
//   - ordinary maps: rho_t = 1, i.e. eps added to the denominator (never a clamp);
//   - exponential maps (performer): rho_t = max_f phi(q_t)_f z_{t,f}, the largest term of the
//     denominator, which scales exactly as the denominator does. The rule is then invariant to
//     the offsets below, and eps changes y by at most 1e-6 relative whatever the input scale.
//   A denominator that underflowed to exactly 0 (its numerator is 0 too) gives y_t = 0, not NaN.
// phi is a FeatureMap submodule registered as "feature_map" (feature_maps/registry.h names them);
// it sees the raw per-head q and k.
//
// Three exact forms of the same function, selectable with forward_form() for testing:
//   quadratic  A = phi(Q) phi(K)^T masked to j <= t, y = A V / normalizer                O(T^2)
//   chunked    chunks of C = cfg.chunk_size (the last may be shorter): masked quadratic inside a
//              chunk plus the running state (S, z) of all earlier chunks                 O(T C)
//   recurrent  the step() recurrence over t, from projections computed for all T at once O(T)
// forward() uses chunked. Bidirectional (causal = false): no mask, every query sees the sums over
// all T tokens; quadratic is then the unmasked product, chunked the state form over all T, and
// recurrent (like step()) is an error.
//
// Offsets for exponential feature maps (performer). exp(W x~ - |x~|^2 / 2) leaves the fp32 range
// for large inputs (|x~|^2 / 2 > 87 underflows every feature). Let l(x) = log phi(x) [F], which
// the map computes in log space. Then:
//   query: phi~(q_t) = exp(l(q_t) - max_f l(q_t)). A per-query factor cancels in the ratio.
//   keys:  M_j = max_f l(k_j), and m_t = max_{j<=t} M_j, the running (cumulative) max. S_t and z_t
//          are stored relative to m_t: S~_t = sum_{j<=t} exp(l(k_j) - m_t) v_j^T, and when a new
//          key raises m, the old sums are rescaled by exp(m_old - m_new), as online softmax does.
//   Every exponent is then <= 0, so nothing overflows, and every form uses these same offsets
//   (quadratic: weights exp(M_j - m_t) inside the mask; chunked: the cummax inside a chunk, joined
//   with the carried m). The offsets are detached from autograd: with this normalizer the output
//   does not depend on them beyond rounding. The state carries m [B,H]; for the other maps m
//   stays 0, unused. In bidirectional mode m is the max over all T keys.
//   Why eps * rho and not a plain eps: the offsets make the largest query and key features 1, but
//   their product can still be far below 1 (the query's and the keys' largest features differ),
//   and a plain eps then dominates the denominator: measured, 1e-3 relative error at input scale
//   4 and garbage at scale 8. With rho the forms match a double log-space reference at scales
//   4, 8 and 12 (tests/test_linear_attention.cpp). Limit: one offset per head cannot keep the
//   per-feature products in the normal fp32 range for extreme inputs (scale ~60 here); outputs
//   stay finite there but lose precision. Per-feature offsets would fix that at O(T C F) cost.
//
// All attention arithmetic, and the state, is fp32 whatever the parameter dtype.
//
// Options for pretrained layouts (what conversion keeps from a Llama / Qwen2 / NeoX teacher):
// rotary position embeddings (mixers/rope.h) rotate q and k before the feature map sees them, at
// the token's position (the state counts tokens in `pos`); grouped-query attention (G = n_kv_head)
// projects G key/value heads, which are repeated to the H query heads before the feature map, so
// the state is per query head: the maps with learned per-head key weights (t2r, hedgehog) give
// each query head its own phi(k), so heads of a group cannot share one S. Biases follow qkv_bias
// and o_bias.
//
// Short convolution (--short-conv K > 0): a causal depthwise convolution of width K, without
// bias, over the q, k and v projections (one kernel per channel, before RoPE and the feature map),
// as flash-linear-attention's ShortConvolution and Zoology's Based place one. It lets the key and
// the value at position t carry the tokens just before t: a recall task stores "key, then value"
// as one phi(k) v^T only if one position sees both. The state keeps the last K-1 projection rows
// (`conv`); every form runs the convolution over the whole input first, so they still agree.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"
#include "seqlab/mixers/mixer.h"

#include <array>

namespace seqlab {

struct LinearAttentionState : MixerStateBase<LinearAttentionState> {
  torch::Tensor S;     // [B,H,F,Dh] fp32: sum phi(k_j) v_j^T (relative to exp(m) for performer)
  torch::Tensor z;     // [B,H,F]    fp32: sum phi(k_j)       (relative to exp(m) for performer)
  torch::Tensor m;     // [B,H]      fp32: running max key log-feature; -inf before the first token
                       //                  for exponential maps, 0 (unused) for the others
  torch::Tensor pos;   // [] int64 on CPU: tokens consumed (the next token's RoPE position)
  torch::Tensor conv;  // [B,K-1,D+2*G*Dh] fp32: the last K-1 rows of the q, k, v projections,
                       //                   oldest first (--short-conv K only; undefined without)
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("S", S);
    f("z", z);
    f("m", m);
    f("pos", pos);
    if (conv.defined()) f("conv", conv);
  }
};

class LinearAttentionImpl : public MixerImpl, public HeadsMixer {
 public:
  static constexpr const char* kArch = "linear";  // --arch, written only here
  enum class Form { quadratic, chunked, recurrent };
  static constexpr double kEps = 1e-6;  // added to every normalizer, in every form

  explicit LinearAttentionImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  // x [B,T,D] -> [B,T,D] through the chosen form; all forms agree within fp32 rounding.
  torch::Tensor forward_form(const torch::Tensor& x, Form form);
  // The attention weights the quadratic form applies: x [B,T,D] -> [B,H,T,T], row t holding
  // phi(q_t).phi(k_j) / normalizer for j <= t (0 above the diagonal when causal). Hedgehog's
  // attention transfer matches these to softmax attention's weights.
  torch::Tensor attention_weights(const torch::Tensor& x);
  // Sets the short convolution to the identity (the newest tap 1, the others 0), so the mixer
  // computes exactly what it would without one: how `convert --short-conv` starts a student.
  void set_identity_conv();
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;
  bool needs_positions() const override { return true; }
  // forward() and step() before the output projection o: the heads' outputs side by side,
  // x [B,T,D] -> [B,T,D] (head h in columns h*Dh..(h+1)*Dh) and x_t [B,D] -> [B,D]. The mixture
  // of attentive experts (mae.h) reweights the heads there.
  torch::Tensor forward_heads(const torch::Tensor& x) override;
  torch::Tensor step_heads(const torch::Tensor& x_t, MixerState& s) override;

  torch::nn::Linear q{nullptr};     // weight [D,D], bias [D] (qkv_bias)
  torch::nn::Linear k{nullptr};     // weight [G*Dh,D], bias [G*Dh] (qkv_bias)
  torch::nn::Linear v{nullptr};     // weight [G*Dh,D], bias [G*Dh] (qkv_bias)
  torch::nn::Linear o{nullptr};     // weight [D,D], bias [D] (o_bias)
  FeatureMap feature_map;           // [B,H,T,Dh] -> [B,H,T,F]
  torch::nn::Conv1d conv{nullptr};  // --short-conv K: weight [C,1,K], C = D + 2*G*Dh; else null

 private:
  // The input side of every form: features and values of all T tokens, fp32.
  struct Features {
    torch::Tensor q;        // [B,H,T,F] phi~(q): per-query offset removed for exponential maps
    torch::Tensor k;        // [B,H,T,F] phi(k), divided by exp(key_max) for exponential maps
    torch::Tensor v;        // [B,H,T,Dh]
    torch::Tensor key_max;  // [B,H,T] M_j for exponential maps; undefined for the others
  };
  // x [B,T,D] at positions p0 .. p0+T-1 (RoPE). With --short-conv, `tail` holds the projection
  // rows before x (null: zeros, the start of a sequence) and is advanced past x.
  Features featurize(const torch::Tensor& x, int64_t p0 = 0, torch::Tensor* tail = nullptr);
  // The q, k, v projections of x [B,T,D], through the short convolution when there is one:
  // [B,T,D], [B,T,G*Dh], [B,T,G*Dh].
  std::array<torch::Tensor, 3> project(const torch::Tensor& x, torch::Tensor* tail);
  // Unnormalized weights a [B,H,T,T] (masked; offset-weighted for exponential maps) and, for
  // exponential maps, the key sums z [B,H,T,F] each query sees (undefined otherwise).
  std::pair<torch::Tensor, torch::Tensor> scores(const Features& f);
  torch::Tensor quadratic(const Features& f);  // -> [B,H,T,Dh]
  torch::Tensor chunked(const Features& f);    // -> [B,H,T,Dh]
  // One recurrence step on token t of f: advances s, returns y_t [B,H,Dh].
  torch::Tensor recur(const Features& f, int64_t t, LinearAttentionState& s);
  // [B,H,T,Dh] fp32 -> o(...) [B,T,D] in the dtype of x
  torch::Tensor merge_heads(const torch::Tensor& y, const torch::Tensor& x);
  // [B,H,T,Dh] fp32 -> [B,T,D] in the dtype of x, before o
  torch::Tensor concat_heads(const torch::Tensor& y, const torch::Tensor& x);
};

}  // namespace seqlab
