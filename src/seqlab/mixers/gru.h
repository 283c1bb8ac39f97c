// Gated recurrent unit (Cho et al. 2014), in PyTorch's convention (torch.nn.GRU), gates r, z, n:
//
//   r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)            reset gate
//   z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)            update gate
//   n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))       candidate
//   h_t = (1 - z_t) * n_t + z_t * h_{t-1}
//   y_t = o(h_t)
//
// w_ih stacks [W_ir; W_iz; W_in] and w_hh stacks [W_hr; W_hz; W_hn] in that order, exactly like
// torch.nn.GRU's weight_ih_l0 / weight_hh_l0, so weights copy across one to one. The reset gate
// multiplies the hidden-side candidate *after* its bias, which is why b_hn lives in w_hh and not
// folded into b_in.
//
// Input side / recurrence split: w_ih runs once over all T tokens; the loop does only w_hh.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct GRUState : MixerStateBase<GRUState> {
  torch::Tensor h;  // [B,D]
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("h", h);
  }
};

class GRUImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "gru";  // --arch, written only here
  explicit GRUImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  torch::nn::Linear w_ih{nullptr};  // weight [3D,D] rows r|z|n, bias [3D]
  torch::nn::Linear w_hh{nullptr};  // weight [3D,D] rows r|z|n, bias [3D]
  torch::nn::Linear o{nullptr};     // weight [D,D], bias [D]

 private:
  // One recurrence step from the precomputed input side xi_t [B,3D] and h [B,D] -> new h [B,D].
  torch::Tensor recur(const torch::Tensor& xi_t, const torch::Tensor& h);
};

}  // namespace seqlab
