#include "seqlab/mixers/elman.h"

namespace seqlab {

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
  const int64_t B = x.size(0), T = x.size(1);
  auto xi = w_ih(x);  // [B,T,D]: the input side for every step at once
  auto h = torch::zeros({B, cfg_.d_model}, x.options());
  std::vector<torch::Tensor> hs;
  hs.reserve(T);
  for (int64_t t = 0; t < T; ++t) {
    h = recur(xi.select(1, t), h);  // [B,D]
    hs.push_back(h);
  }
  return o(torch::stack(hs, 1));  // [B,T,D]
}

std::unique_ptr<MixerState> ElmanImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<ElmanState>();
  s->h = torch::zeros({batch, cfg_.d_model}, state_options());
  return s;
}

torch::Tensor ElmanImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<ElmanState>(st, "elman");
  s.h = recur(w_ih(x_t), s.h);  // [B,D]
  return o(s.h);                // [B,D]
}

}  // namespace seqlab
