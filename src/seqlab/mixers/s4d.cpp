#include "seqlab/mixers/s4d.h"

#include "seqlab/mixers/registry.h"

#include <cmath>

namespace seqlab {

SEQLAB_REGISTER_ARCH(S4DImpl, {"S4D: diagonal complex SSM (S4D-Lin), FFT convolution / recurrence",
                               70,
                               {},
                               {/*matrices=*/2, {}}});

namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

S4DImpl::S4DImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  const int64_t D = cfg.d_model, N = cfg.d_state;
  SEQLAB_CHECK(N >= 2 && N % 2 == 0,
               "s4d: d_state must be even and >= 2 (N/2 complex modes plus their conjugates), "
               "got {}",
               N);
  const int64_t M = N / 2;
  w_ih = register_module("w_ih", torch::nn::Linear(D, D));
  o = register_module("o", torch::nn::Linear(D, D));
  // S4D-Lin: A_m = -1/2 + i pi m. The real part sets the decay, the imaginary part spreads the
  // modes over frequencies like a Fourier basis.
  log_a_real = register_parameter("log_a_real", torch::full({D, M}, std::log(0.5)));
  a_imag = register_parameter("a_imag", (kPi * torch::arange(M, torch::kFloat32)).repeat({D, 1}));
  // dt log-uniform in [0.001, 0.1]: channels see time scales from ~10 to ~1000 steps.
  const double lo = std::log(0.001), hi = std::log(0.1);
  log_dt = register_parameter("log_dt", torch::rand({D}) * (hi - lo) + lo);
  b = register_parameter("b", torch::stack({torch::ones({D, M}), torch::zeros({D, M})}, -1));
  c = register_parameter("c", torch::randn({D, M, 2}) * std::sqrt(0.5));
  skip = register_parameter("skip", torch::randn({D}));
}

S4DImpl::Discrete S4DImpl::discretize() const {
  auto ar = -torch::exp(log_a_real);           // [D,M]
  auto dt = torch::exp(log_dt).unsqueeze(-1);  // [D,1]
  auto mag = torch::exp(dt * ar);              // [D,M]: |Abar|
  auto ang = dt * a_imag;                      // [D,M]: arg Abar
  Discrete d;
  d.a_re = mag * torch::cos(ang);  // [D,M]
  d.a_im = mag * torch::sin(ang);  // [D,M]
  // q = (Abar - 1) / A = (Abar - 1) conj(A) / |A|^2; |A|^2 > 0 because Re A < 0.
  auto den = ar * ar + a_imag * a_imag;                     // [D,M]
  auto q_re = ((d.a_re - 1) * ar + d.a_im * a_imag) / den;  // [D,M]
  auto q_im = (d.a_im * ar - (d.a_re - 1) * a_imag) / den;  // [D,M]
  auto b_re = b.select(-1, 0), b_im = b.select(-1, 1);      // [D,M] each
  d.b_re = q_re * b_re - q_im * b_im;                       // [D,M]
  d.b_im = q_re * b_im + q_im * b_re;                       // [D,M]
  return d;
}

torch::Tensor S4DImpl::kernel(int64_t T) const {
  auto d = discretize();
  auto c_re = c.select(-1, 0), c_im = c.select(-1, 1);  // [D,M] each
  auto cb_re = c_re * d.b_re - c_im * d.b_im;           // [D,M]: Re(C Bbar)
  auto cb_im = c_re * d.b_im + c_im * d.b_re;           // [D,M]: Im(C Bbar)
  // Abar^l = exp(l dt A), evaluated directly rather than by repeated products.
  auto l = torch::arange(T, log_dt.options());                 // [T]
  auto dt = torch::exp(log_dt).unsqueeze(-1);                  // [D,1]
  auto dta_re = (-torch::exp(log_a_real) * dt).unsqueeze(-1);  // [D,M,1]
  auto dta_im = (a_imag * dt).unsqueeze(-1);                   // [D,M,1]
  auto mag = torch::exp(dta_re * l);                           // [D,M,T]
  auto ang = dta_im * l;                                       // [D,M,T]
  auto terms = cb_re.unsqueeze(-1) * torch::cos(ang) - cb_im.unsqueeze(-1) * torch::sin(ang);
  return 2 * (mag * terms).sum(1);  // [D,T]
}

torch::Tensor S4DImpl::forward(const torch::Tensor& x) {
  const int64_t T = x.size(1);
  auto u = w_ih(x);    // [B,T,D]
  auto k = kernel(T);  // [D,T]
  // Zero-padding to 2T turns the FFT's circular convolution into a linear, causal one.
  const int64_t n = 2 * T;
  auto u_f = torch::fft::rfft(u.transpose(1, 2), n);          // [B,D,T+1] complex
  auto k_f = torch::fft::rfft(k, n);                          // [D,T+1] complex
  auto y = torch::fft::irfft(u_f * k_f, n).narrow(-1, 0, T);  // [B,D,T]
  y = y.transpose(1, 2) + skip * u;                           // [B,T,D]
  return o(torch::gelu(y));                                   // [B,T,D]
}

std::unique_ptr<MixerState> S4DImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<S4DState>();
  const int64_t M = cfg_.d_state / 2;
  s->s_re = torch::zeros({batch, cfg_.d_model, M}, state_options());
  s->s_im = torch::zeros({batch, cfg_.d_model, M}, state_options());
  return s;
}

torch::Tensor S4DImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<S4DState>(st, kArch);
  auto d = discretize();
  auto u = w_ih(x_t);                                         // [B,D]
  auto u3 = u.unsqueeze(-1);                                  // [B,D,1]
  auto re = d.a_re * s.s_re - d.a_im * s.s_im + d.b_re * u3;  // [B,D,M]
  auto im = d.a_re * s.s_im + d.a_im * s.s_re + d.b_im * u3;  // [B,D,M]
  s.s_re = re;
  s.s_im = im;
  auto c_re = c.select(-1, 0), c_im = c.select(-1, 1);      // [D,M] each
  auto y = 2 * (c_re * re - c_im * im).sum(-1) + skip * u;  // [B,D]
  return o(torch::gelu(y));                                 // [B,D]
}

}  // namespace seqlab
