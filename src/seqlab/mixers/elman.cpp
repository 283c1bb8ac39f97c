#include "seqlab/mixers/elman.h"

#include "seqlab/mixers/elman_scan.h"
#include "seqlab/mixers/registry.h"

namespace seqlab {

SEQLAB_REGISTER_ARCH(ElmanImpl,
                     {"Elman RNN: h = tanh(W_ih x + W_hh h)", 30, {}, {/*matrices=*/3, {}}});

ElmanImpl::ElmanImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model;
  w_ih = register_module("w_ih", torch::nn::Linear(D, D));
  w_hh = register_module("w_hh", torch::nn::Linear(D, D));
  o = register_module("o", torch::nn::Linear(D, D));
}

torch::Tensor ElmanImpl::recur(const torch::Tensor& xi_t, const torch::Tensor& h) {
  return torch::tanh(xi_t + w_hh(h));  // [B,D]
}

torch::Tensor ElmanImpl::forward(const torch::Tensor& x) {
  // The input side for every step in one matmul ([B,T,D]), then the recurrence as one fused loop
  // with its own backward (elman_scan.h); step() below runs recur() one token at a time.
  return o(elman_scan(w_ih(x), w_hh->weight, w_hh->bias));  // [B,T,D]
}

std::unique_ptr<MixerState> ElmanImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<ElmanState>();
  s->h = torch::zeros({batch, cfg_.d_model}, state_options());
  return s;
}

torch::Tensor ElmanImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<ElmanState>(st, kArch);
  s.h = recur(w_ih(x_t), s.h);  // [B,D]
  return o(s.h);                // [B,D]
}

}  // namespace seqlab
