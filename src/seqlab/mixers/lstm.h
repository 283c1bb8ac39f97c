// Long short-term memory (Hochreiter & Schmidhuber 1997; forget gate of Gers et al. 2000), in
// PyTorch's convention (torch.nn.LSTM), gates i, f, g, o:
//
//   [i; f; g; o] = w_ih x_t + w_hh h_{t-1}         (biases inside w_ih and w_hh)
//   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
//   h_t = sigmoid(o) * tanh(c_t)
//   y_t = o_proj(h_t)                                (the module member named `o`)
//
// w_ih and w_hh stack the gates in the order i|f|g|o, exactly like torch.nn.LSTM's weight_ih_l0 /
// weight_hh_l0, so weights copy across one to one.
//
// Forget-gate bias: the total forget bias b_if + b_hf starts at 1 (w_ih's forget slice is 1, w_hh's
// is 0), so that the cell remembers by default early in training (Jozefowicz et al. 2015).
//
// Input side / recurrence split: w_ih runs once over all T tokens; the loop does only w_hh.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct LSTMState : MixerStateBase<LSTMState> {
  torch::Tensor h;  // [B,D] hidden state (what the output projection reads)
  torch::Tensor c;  // [B,D] cell state
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("h", h);
    f("c", c);
  }
};

class LSTMImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "lstm";  // --arch, written only here
  explicit LSTMImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  torch::nn::Linear w_ih{nullptr};  // weight [4D,D] rows i|f|g|o, bias [4D]
  torch::nn::Linear w_hh{nullptr};  // weight [4D,D] rows i|f|g|o, bias [4D]
  torch::nn::Linear o{nullptr};     // weight [D,D], bias [D]: the output projection

 private:
  // One recurrence step from the precomputed input side xi_t [B,4D]; updates h, c [B,D] in place.
  void recur(const torch::Tensor& xi_t, torch::Tensor& h, torch::Tensor& c);
};

}  // namespace seqlab
