#include "seqlab/mixers/gru.h"

#include "seqlab/mixers/gru_scan.h"
#include "seqlab/mixers/registry.h"

namespace seqlab {

SEQLAB_REGISTER_ARCH(GRUImpl, {"GRU (PyTorch gate order r, z, n)", 40, {}, {/*matrices=*/7, {}}});

GRUImpl::GRUImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model;
  // LibTorch's default Linear init is U(-1/sqrt(D), 1/sqrt(D)) for weight and bias, which is
  // also torch.nn.GRU's init.
  w_ih = register_module("w_ih", torch::nn::Linear(D, 3 * D));
  w_hh = register_module("w_hh", torch::nn::Linear(D, 3 * D));
  o = register_module("o", torch::nn::Linear(D, D));
}

torch::Tensor GRUImpl::recur(const torch::Tensor& xi_t, const torch::Tensor& h) {
  auto hh = w_hh(h);                        // [B,3D]
  auto xg = xi_t.chunk(3, -1);              // 3 x [B,D]: input side of r, z, n
  auto hg = hh.chunk(3, -1);                // 3 x [B,D]: hidden side of r, z, n
  auto r = torch::sigmoid(xg[0] + hg[0]);   // [B,D]
  auto z = torch::sigmoid(xg[1] + hg[1]);   // [B,D]
  auto n = torch::tanh(xg[2] + r * hg[2]);  // [B,D]
  return n + z * (h - n);                   // [B,D]: (1 - z) n + z h
}

torch::Tensor GRUImpl::forward(const torch::Tensor& x) {
  // The input side for every step in one matmul ([B,T,3D]), then the recurrence as one fused loop
  // with its own backward (gru_scan.h); step() below runs recur() one token at a time.
  return o(gru_scan(w_ih(x), w_hh->weight, w_hh->bias));  // [B,T,D]
}

std::unique_ptr<MixerState> GRUImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<GRUState>();
  s->h = torch::zeros({batch, cfg_.d_model}, state_options());
  return s;
}

torch::Tensor GRUImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<GRUState>(st, kArch);
  s.h = recur(w_ih(x_t), s.h);  // [B,D]
  return o(s.h);                // [B,D]
}

}  // namespace seqlab
