#include "seqlab/mixers/lstm.h"

#include "seqlab/mixers/lstm_scan.h"
#include "seqlab/mixers/registry.h"

namespace seqlab {

SEQLAB_REGISTER_ARCH(LSTMImpl, {"LSTM (PyTorch gate order i, f, g, o), forget bias 1",
                                50,
                                {},
                                {/*matrices=*/9, {}}});

LSTMImpl::LSTMImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model;
  w_ih = register_module("w_ih", torch::nn::Linear(D, 4 * D));
  w_hh = register_module("w_hh", torch::nn::Linear(D, 4 * D));
  o = register_module("o", torch::nn::Linear(D, D));
  torch::NoGradGuard ng;
  w_ih->bias.narrow(0, D, D).fill_(1.0);  // forget slice: total forget bias starts at 1
  w_hh->bias.narrow(0, D, D).zero_();
}

void LSTMImpl::recur(const torch::Tensor& xi_t, torch::Tensor& h, torch::Tensor& c) {
  auto g = (xi_t + w_hh(h)).chunk(4, -1);  // 4 x [B,D]: pre-activations of i, f, g, o
  auto i_gate = torch::sigmoid(g[0]);      // [B,D]
  auto f_gate = torch::sigmoid(g[1]);      // [B,D]
  auto cand = torch::tanh(g[2]);           // [B,D]
  auto o_gate = torch::sigmoid(g[3]);      // [B,D]
  c = f_gate * c + i_gate * cand;          // [B,D]
  h = o_gate * torch::tanh(c);             // [B,D]
}

torch::Tensor LSTMImpl::forward(const torch::Tensor& x) {
  // The input side for every step at once ([B,T,4D]), then the recurrence as one fused loop with
  // its own backward (lstm_scan.h); step() below runs recur() one token at a time.
  return o(lstm_scan(w_ih(x), w_hh->weight, w_hh->bias));  // [B,T,D]
}

std::unique_ptr<MixerState> LSTMImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<LSTMState>();
  s->h = torch::zeros({batch, cfg_.d_model}, state_options());
  s->c = torch::zeros({batch, cfg_.d_model}, state_options());
  return s;
}

torch::Tensor LSTMImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<LSTMState>(st, kArch);
  recur(w_ih(x_t), s.h, s.c);  // s.h, s.c: [B,D]
  return o(s.h);               // [B,D]
}

}  // namespace seqlab
