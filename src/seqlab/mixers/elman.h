// Elman RNN (tanh), the simplest recurrent mixer.
//
//   h_t = tanh(w_ih x_t + w_hh h_{t-1})        (biases inside w_ih and w_hh)
//   y_t = o(h_t)
//
// Input side / recurrence split (marian's applyInput/applyState): w_ih is applied to all T tokens
// in one matmul; only the cheap w_hh product runs inside the time loop.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct ElmanState : MixerStateBase<ElmanState> {
  torch::Tensor h;  // [B,D]
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("h", h);
  }
};

class ElmanImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "elman";  // --arch, written only here
  explicit ElmanImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  torch::nn::Linear w_ih{nullptr};  // weight [D,D], bias [D]
  torch::nn::Linear w_hh{nullptr};  // weight [D,D], bias [D]
  torch::nn::Linear o{nullptr};     // weight [D,D], bias [D]

 private:
  // One recurrence step from the precomputed input side xi_t [B,D] and h [B,D] -> new h [B,D].
  torch::Tensor recur(const torch::Tensor& xi_t, const torch::Tensor& h);
};

}  // namespace seqlab
