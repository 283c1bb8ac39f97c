// Quasi-recurrent neural network (Bradbury, Merity, Xiong & Socher 2017, "Quasi-Recurrent Neural
// Networks", eqs. 1-4).
//
// All gates come from a causal convolution of width k (cfg.qrnn_window, 1 or 2) over the *input*
// only, written as one Linear on the stacked window [x_{t-1}; x_t] (x_{-1} = 0):
//
//   [z; f; o] = w_ih [x_{t-1}; x_t]        (k = 2; for k = 1 just w_ih x_t)
//   z = tanh(.)   candidate,   f = sigmoid(.)   forget gate,   o = sigmoid(.)   output gate
//
// then a cheap elementwise pooling (cfg.qrnn_pooling):
//
//   f-pooling:   h_t = f_t * h_{t-1} + (1 - f_t) * z_t                         (no o gate)
//   fo-pooling:  c_t = f_t * c_{t-1} + (1 - f_t) * z_t,   h_t = o_t * c_t
//   y_t = o_proj(h_t)                                       (the module member named `o`)
//
// There is no hidden-to-hidden matrix: that is the point of the QRNN. Every matmul runs over all T
// tokens at once, and the recurrence is elementwise (the input side / recurrence split at its
// purest): forward runs it as one fused loop over T (linear_scan.h), step() one token at a time.
// Under f-pooling c and h coincide, so the state carries c only.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct QRNNState : MixerStateBase<QRNNState> {
  torch::Tensor c;       // [B,D] pooled memory (= h under f-pooling)
  torch::Tensor x_prev;  // [B,D] the previous input x_{t-1}; window 2 only (undefined for window 1)
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("c", c);
    if (x_prev.defined()) f("x_prev", x_prev);
  }
};

class QRNNImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "qrnn";  // --arch, written only here
  explicit QRNNImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  // weight [G*D, k*D] with G = 2 (rows z|f) for f-pooling or 3 (rows z|f|o) for fo-pooling, and
  // columns x_{t-1}|x_t for k = 2; bias [G*D]
  torch::nn::Linear w_ih{nullptr};
  torch::nn::Linear o{nullptr};  // weight [D,D], bias [D]: the output projection

 private:
  int64_t n_gates() const { return cfg_.qrnn_pooling == "fo" ? 3 : 2; }
  // Pools one step from the gate pre-activations g_t [..,G*D] and the memory c [..,D]: updates c
  // and returns h [..,D].
  torch::Tensor pool(const torch::Tensor& g_t, torch::Tensor& c);
};

}  // namespace seqlab
