#include "seqlab/mixers/mamba.h"

#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/selective_scan.h"

#include <cmath>

namespace seqlab {

SEQLAB_REGISTER_ARCH(MambaImpl, {"Mamba: selective SSM (input-dependent dt, B, C), conv + gate",
                                 80,
                                 {},
                                 {/*matrices=*/7, {}}});

MambaImpl::MambaImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model, E = d_inner(), N = cfg.d_state, K = cfg.d_conv, R = dt_rank();
  SEQLAB_CHECK(E > 0 && N > 0 && K > 0, "mamba: expand, d_state and d_conv must be positive");
  in_proj =
      register_module("in_proj", torch::nn::Linear(torch::nn::LinearOptions(D, 2 * E).bias(false)));
  conv1d = register_module(
      "conv1d", torch::nn::Conv1d(torch::nn::Conv1dOptions(E, E, K).groups(E).padding(K - 1)));
  x_proj = register_module("x_proj",
                           torch::nn::Linear(torch::nn::LinearOptions(E, R + 2 * N).bias(false)));
  dt_proj = register_module("dt_proj", torch::nn::Linear(R, E));
  o = register_module("o", torch::nn::Linear(E, D));
  // S4D-Real: A_en = -(n + 1), the same for every channel.
  a_log = register_parameter("a_log",
                             torch::log(torch::arange(1, N + 1, torch::kFloat32)).repeat({E, 1}));
  skip = register_parameter("skip", torch::ones({E}));
  torch::NoGradGuard ng;
  const double std_w = 1.0 / std::sqrt(static_cast<double>(R));
  dt_proj->weight.uniform_(-std_w, std_w);
  // dt log-uniform in [0.001, 0.1], stored through softplus^-1 so that softplus(bias) = dt.
  const double lo = std::log(0.001), hi = std::log(0.1);
  auto dt = torch::exp(torch::rand({E}) * (hi - lo) + lo).clamp_min(1e-4);  // [E]
  dt_proj->bias.copy_(dt + torch::log(-torch::expm1(-dt)));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> MambaImpl::selection(
    const torch::Tensor& x) {
  const int64_t R = dt_rank(), N = cfg_.d_state;
  auto dbc = x_proj(x);                                            // [..,R+2N]
  auto delta = torch::softplus(dt_proj(dbc.narrow(-1, 0, R)));     // [..,E]
  return {delta, dbc.narrow(-1, R, N), dbc.narrow(-1, R + N, N)};  // [..,E], [..,N] x 2
}

torch::Tensor MambaImpl::scan(const torch::Tensor& u, const torch::Tensor& delta,
                              const torch::Tensor& B, const torch::Tensor& C) {
  return selective_scan(u, delta, -torch::exp(a_log), B, C);  // [B,T,E]
}

torch::Tensor MambaImpl::forward(const torch::Tensor& x) {
  const int64_t T = x.size(1);
  auto xz = in_proj(x).chunk(2, -1);  // 2 x [B,T,E]: x and the gate z
  // conv1d pads K-1 on both sides; its first T outputs are the causal ones.
  auto xc = conv1d(xz[0].transpose(1, 2)).narrow(2, 0, T).transpose(1, 2);  // [B,T,E]
  xc = torch::silu(xc);                                                     // [B,T,E]
  auto [delta, B, C] = selection(xc);          // [B,T,E], [B,T,N], [B,T,N]
  auto y = scan(xc, delta, B, C) + skip * xc;  // [B,T,E]
  return o(y * torch::silu(xz[1]));            // [B,T,D]
}

std::unique_ptr<MixerState> MambaImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<MambaState>();
  s->conv = torch::zeros({batch, d_inner(), cfg_.d_conv - 1}, state_options());
  s->h = torch::zeros({batch, d_inner(), cfg_.d_state}, state_options());
  return s;
}

torch::Tensor MambaImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<MambaState>(st, kArch);
  const int64_t K = cfg_.d_conv;
  auto xz = in_proj(x_t).chunk(2, -1);                                    // 2 x [B,E]
  auto window = torch::cat({s.conv, xz[0].unsqueeze(-1)}, -1);            // [B,E,K]: oldest first
  auto xc = (window * conv1d->weight.squeeze(1)).sum(-1) + conv1d->bias;  // [B,E]
  xc = torch::silu(xc);                                                   // [B,E]
  s.conv = window.narrow(-1, 1, K - 1).contiguous();                      // [B,E,K-1]
  auto [delta, B, C] = selection(xc);                                     // [B,E], [B,N], [B,N]
  auto y = selective_scan_step(xc, delta, B, C, -torch::exp(a_log), s.h) + skip * xc;  // [B,E]
  return o(y * torch::silu(xz[1]));                                                    // [B,D]
}

}  // namespace seqlab
