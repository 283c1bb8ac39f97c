#include "seqlab/mixers/qrnn.h"

#include "seqlab/mixers/linear_scan.h"
#include "seqlab/mixers/registry.h"

namespace seqlab {

SEQLAB_REGISTER_ARCH(QRNNImpl, {"QRNN: gates from a causal conv over the input, f or fo pooling",
                                60,
                                {},
                                {/*matrices=*/7, {}}});

QRNNImpl::QRNNImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model;
  SEQLAB_CHECK(cfg.qrnn_window == 1 || cfg.qrnn_window == 2, "qrnn: window must be 1 or 2, got {}",
               cfg.qrnn_window);
  SEQLAB_CHECK(cfg.qrnn_pooling == "f" || cfg.qrnn_pooling == "fo",
               "qrnn: pooling must be f or fo, got '{}'", cfg.qrnn_pooling);
  w_ih = register_module("w_ih", torch::nn::Linear(cfg.qrnn_window * D, n_gates() * D));
  o = register_module("o", torch::nn::Linear(D, D));
}

torch::Tensor QRNNImpl::pool(const torch::Tensor& g_t, torch::Tensor& c) {
  auto g = g_t.chunk(n_gates(), -1);  // G x [..,D]: pre-activations of z, f (, o)
  auto z = torch::tanh(g[0]);         // [..,D]
  auto f = torch::sigmoid(g[1]);      // [..,D]
  c = z + f * (c - z);                // [..,D]: f c + (1 - f) z
  return n_gates() == 3 ? torch::sigmoid(g[2]) * c : c;  // [..,D]
}

torch::Tensor QRNNImpl::forward(const torch::Tensor& x) {
  const int64_t T = x.size(1);
  auto win = x;  // [B,T,D]
  if (cfg_.qrnn_window == 2) {
    // x shifted one step right, with zeros before t = 0: the causal convolution's left tap.
    auto x_prev = torch::constant_pad_nd(x, {0, 0, 1, 0}).narrow(1, 0, T);  // [B,T,D]
    win = torch::cat({x_prev, x}, -1);                                      // [B,T,2D]
  }
  // Every gate of every step in one matmul, and their activations over all T at once: only
  // c_t = f_t c_{t-1} + (1 - f_t) z_t runs over T, as one fused loop (linear_scan.h).
  auto g = w_ih(win).chunk(n_gates(), -1);  // G x [B,T,D]: pre-activations of z, f (, o)
  auto z = torch::tanh(g[0]), f = torch::sigmoid(g[1]);     // [B,T,D]
  auto c = linear_scan(f, (1 - f) * z);                     // [B,T,D]
  return o(n_gates() == 3 ? torch::sigmoid(g[2]) * c : c);  // [B,T,D]
}

std::unique_ptr<MixerState> QRNNImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<QRNNState>();
  s->c = torch::zeros({batch, cfg_.d_model}, state_options());
  if (cfg_.qrnn_window == 2) s->x_prev = torch::zeros({batch, cfg_.d_model}, state_options());
  return s;
}

torch::Tensor QRNNImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<QRNNState>(st, kArch);
  auto win = x_t;  // [B,D]
  if (cfg_.qrnn_window == 2) {
    win = torch::cat({s.x_prev, x_t}, -1);  // [B,2D]
    s.x_prev = x_t.clone();                 // [B,D]: a copy, so the caller may reuse its buffer
  }
  auto h = pool(w_ih(win), s.c);  // [B,D]
  return o(h);                    // [B,D]
}

}  // namespace seqlab
