// S4D: a diagonal state-space layer (Gu, Gupta, Goel & Ré 2022, "On the Parameterization and
// Initialization of Diagonal State Space Models", eqs. 2-6 and the S4D-Lin initialisation).
//
// Every channel d of the residual stream runs its own linear time-invariant SSM, with a diagonal
// complex state of M = N/2 modes (N = cfg.d_state); the other N/2 are the complex conjugates, which
// the factor 2 Re(.) accounts for, so the real state size per channel is N as in the paper:
//
//   A = -exp(log_a_real) + i a_imag           [D,M]   (Re A < 0 always: the SSM is stable)
//   dt = exp(log_dt)                          [D]     learned step size per channel
//   Abar = exp(dt A),  Bbar = (Abar - 1) / A * B     zero-order hold
//   s_t = Abar s_{t-1} + Bbar u_t             recurrent form (complex state, elementwise)
//   y_t = 2 Re(sum_m C_m s_t,m) + skip u_t
//
// Unrolled, y = K * u + skip u with the causal kernel K_l = 2 Re(sum_m C_m Bbar_m Abar_m^l), l < T,
// computed in closed form (a Vandermonde product: Abar^l = exp(l dt A)) and applied as a causal
// convolution through a zero-padded FFT: O(T log T), with no loop over time. That is the parallel
// form; step() is the recurrent form.
//
// Around the SSM (the S4D block): u = w_ih(x) is a D -> D input projection, the SSM output goes
// through GELU, and o projects back: out = o(gelu(y)).
//
// Init (S4D-Lin): log_a_real = log(0.5), a_imag = pi m, B = 1, C ~ complex normal with unit
// variance, dt log-uniform in [0.001, 0.1], skip ~ N(0, 1).
//
// Complex numbers are kept as real/imag pairs of fp32 tensors throughout: parameters b and c carry
// a trailing [..,2] (re, im) axis, and the state is two tensors s_re, s_im.
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct S4DState : MixerStateBase<S4DState> {
  torch::Tensor s_re;  // [B,D,M] real part of the complex diagonal state, M = N/2
  torch::Tensor s_im;  // [B,D,M] imaginary part
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("s_re", s_re);
    f("s_im", s_im);
  }
};

class S4DImpl : public MixerImpl {
 public:
  static constexpr const char* kArch = "s4d";  // --arch, written only here
  explicit S4DImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;

  // The SSM convolution kernel K for lengths 0..T-1: [D,T]. The SSM alone maps u to
  // causal_conv(u, K) + skip u.
  torch::Tensor kernel(int64_t T) const;

  torch::nn::Linear w_ih{nullptr};  // weight [D,D], bias [D]: u = w_ih(x)
  torch::nn::Linear o{nullptr};     // weight [D,D], bias [D]
  torch::Tensor log_a_real;         // [D,M]   Re A = -exp(log_a_real)
  torch::Tensor a_imag;             // [D,M]   Im A
  torch::Tensor log_dt;             // [D]     log step size
  torch::Tensor b;                  // [D,M,2] B as (re, im)
  torch::Tensor c;                  // [D,M,2] C as (re, im)
  torch::Tensor skip;               // [D]     the paper's D: a direct path u -> y

 private:
  // Abar and Bbar (zero-order hold) as real/imag pairs, each [D,M].
  struct Discrete {
    torch::Tensor a_re, a_im, b_re, b_im;
  };
  Discrete discretize() const;
};

}  // namespace seqlab
