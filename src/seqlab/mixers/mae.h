// Mixture of attentive experts (MAE), "A Mixture of h-1 Heads is Better than h Heads" (Peng,
// Schwartz, Li and Smith, ACL 2020, eq. 3-5).
//
// Multi-head attention with H heads is o(concat_h y_h) = sum_h W_o^h y_h + b, where y_h is head
// h's output and W_o^h its block of columns of the output projection. Expert i drops head i and
// rescales the rest so that its output keeps the scale of the whole:
//
//   f_i(x) = H/(H-1) sum_{h != i} W_o^h y_h + b
//
// A gate gives every input responsibilities g_1..g_H (a softmax, summing to one), and the layer
// outputs the mixture sum_i g_i f_i. Swapping the two sums, head h enters with the coefficient
//
//   c_h = H/(H-1) sum_{i != h} g_i = H/(H-1) (1 - g_h),     y = o(concat_h c_h y_h)
//
// so the mixture costs one attention pass, not H. With uniform gates (g_i = 1/H) every c_h is 1
// and MAE is exactly the multi-head attention it wraps (tested).
//
// The gate is a two-layer MLP, g_t = softmax(W2 tanh(W1 u_t + b1) + b2). The paper gates a whole
// sentence by the mean of its encoder states; a causal model can only use what it has read, so
// u_t is the mean of the mixer inputs x_1..x_t (--mae-gate prefix, the default) or x_t alone
// (--mae-gate token). A bidirectional mixer uses the mean over all T tokens. The recurrent state
// carries the running sum and count beside the wrapped attention's own state.
//
// Parameter names: the wrapped attention's own (q, k, v, o, feature_map.*), unchanged, so a
// trained MAE converts like any attention layer, plus gate.fc1.{weight [G,D], bias [G]} and
// gate.fc2.{weight [H,G], bias [H]}, G = --mae-gate-hidden or D. "gate." is how block coordinate
// descent (train/mae_schedule.h) tells the gate from the experts.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct MaeState : MixerState {
  std::unique_ptr<MixerState> attn;  // the wrapped attention's state (KV cache or S, z, m)
  torch::Tensor sum;                 // [B,D] sum of the mixer inputs so far (prefix gate)
  torch::Tensor count;               // []    int64 on CPU: tokens read so far
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override;
  std::unique_ptr<MixerState> clone() const override;
};

struct MaeGateImpl : torch::nn::Module {
  MaeGateImpl(int64_t d_model, int64_t d_hidden, int64_t n_head);
  torch::Tensor forward(const torch::Tensor& u);  // [...,D] -> [...,H], rows summing to one
  torch::nn::Linear fc1{nullptr};                 // weight [G,D], bias [G]
  torch::nn::Linear fc2{nullptr};                 // weight [H,G], bias [H]
};
TORCH_MODULE(MaeGate);

class MaeImpl : public MixerImpl {
 public:
  // cfg.mae must be set and cfg.arch be softmax or linear.
  explicit MaeImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;  // [B,T,D] -> [B,T,D]
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;  // [B,D] -> [B,D]
  bool needs_positions() const override { return true; }

  // The gate's responsibilities over the H experts at every position: x [B,T,D] -> [B,T,H].
  torch::Tensor responsibilities(const torch::Tensor& x);

  MaeGate gate{nullptr};

 private:
  // Head coefficients c = H/(H-1) (1 - g): g [...,H] -> [...,H].
  torch::Tensor head_scale(const torch::Tensor& g) const;
  // heads [...,D] (heads side by side) times c [...,H] per head, then o: -> [...,D].
  torch::Tensor mix(const torch::Tensor& heads, const torch::Tensor& c);

  Mixer attn_;                    // the wrapped attention; its submodules are registered as ours
  HeadsMixer* heads_ = nullptr;   // attn_ seen as its heads (owned by attn_)
  torch::nn::Linear o_{nullptr};  // the wrapped attention's output projection
};

}  // namespace seqlab
