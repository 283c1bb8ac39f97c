// Mamba: a selective state-space mixer (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with
// Selective State Spaces", Algorithm 2 and Section 3.4's block).
//
//   [x; z] = in_proj(u)                          E = expand * D channels each
//   x = silu(causal_depthwise_conv(x))           width K = cfg.d_conv, per channel
//   [dt_in; B; C] = x_proj(x)                    R = ceil(D/16), N, N: all input-dependent
//   delta = softplus(dt_proj(dt_in))             [..,E] step size per channel and token
//   A = -exp(a_log)                              [E,N], S4D-Real init: A_en = -(n+1)
//   h_t = exp(delta_t A) * h_{t-1} + delta_t B_t x_t      (Abar = exp(delta A), Bbar = delta B as
//   y_t = C_t . h_t + skip * x_t                            in the paper's simplified ZOH)
//   out = o(y * silu(z))                         the paper's out_proj, named o here
//
// Because delta, B and C depend on the token, there is no convolution kernel: the parallel form is
// a scan. Here it is one fused loop over T with its own backward (selective_scan.h), after every
// projection has run over all T tokens at once (the input side / recurrence split). The recurrent
// state is the conv window (the last K-1 inputs of the convolution) and the SSM state h.
//
// Init follows the reference implementation: dt_proj's bias is softplus^-1 of a dt log-uniform in
// [0.001, 0.1], its weight U(-R^-1/2, R^-1/2); skip = 1. in_proj and x_proj have no bias (x_proj's
// dt part feeds dt_proj, which has one); o keeps its bias like every seqlab output projection.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct MambaState : MixerStateBase<MambaState> {
  torch::Tensor conv;  // [B,E,K-1] the last K-1 inputs of the causal convolution, oldest first
  torch::Tensor h;     // [B,E,N] SSM state
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("conv", conv);
    f("h", h);
  }
};

class MambaImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "mamba";  // --arch, written only here
  explicit MambaImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  // The selective scan alone, from h = 0: u [B,T,E], delta [B,T,E], B and C [B,T,N] -> y [B,T,E]
  // with y_t = C_t . h_t (without the skip term): the fused selective_scan (selective_scan.h).
  torch::Tensor scan(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& B,
                     const torch::Tensor& C);

  int64_t d_inner() const { return cfg_.expand * cfg_.d_model; }
  int64_t dt_rank() const { return (cfg_.d_model + 15) / 16; }

  torch::nn::Linear in_proj{nullptr};  // weight [2E,D], no bias: rows x|z
  torch::nn::Conv1d conv1d{nullptr};   // weight [E,1,K], bias [E]: depthwise, causal
  torch::nn::Linear x_proj{nullptr};   // weight [R+2N,E], no bias: rows dt_in|B|C
  torch::nn::Linear dt_proj{nullptr};  // weight [E,R], bias [E]
  torch::nn::Linear o{nullptr};        // weight [D,E], bias [D]
  torch::Tensor a_log;                 // [E,N] A = -exp(a_log)
  torch::Tensor skip;                  // [E]   the paper's D

 private:
  // delta [..,E], B and C [..,N] from the conv output x [..,E].
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> selection(const torch::Tensor& x);
};

}  // namespace seqlab
