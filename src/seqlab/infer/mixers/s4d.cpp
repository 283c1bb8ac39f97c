// Fast S4D (mixers/s4d.h has the maths): per channel d, M = N/2 complex diagonal modes,
// discretised by zero-order hold,
//   A = -exp(log_a_real) + i a_imag,   dt = exp(log_dt),   u = w_ih(x)
//   Abar = exp(dt A),   Bbar = (Abar - 1) / A * B
//   s' = Abar s + Bbar u,   y = 2 Re(sum_m C_m s'_m) + skip u,   out = o(gelu(y)).
// Abar and Bbar do not depend on the token, so they are computed once here (in double, from the
// fp32 parameters, then rounded) where the LibTorch step() recomputes them every token.
// State: s_re [D][M], then s_im [D][M] (S4DState's s_re and s_im for one sequence, in for_each
// order).
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/s4d.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

class FastS4D : public FastMixer {
 public:
  FastS4D(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model), M_(cfg.d_state / 2), w_ih_(w, "w_ih", D_, D_), o_(w, "o", D_, D_) {
    SEQLAB_CHECK(cfg.d_state >= 2 && cfg.d_state % 2 == 0,
                 "s4d: d_state must be even and >= 2, got {}", cfg.d_state);
    const auto log_a_real = w.take("log_a_real", {D_, M_});
    const auto a_imag = w.take("a_imag", {D_, M_});
    const auto log_dt = w.take("log_dt", {D_});
    const auto b = w.take("b", {D_, M_, 2});
    const auto c = w.take("c", {D_, M_, 2});
    skip_ = w.take("skip", {D_});
    a_re_.resize(D_ * M_);
    a_im_.resize(D_ * M_);
    b_re_.resize(D_ * M_);
    b_im_.resize(D_ * M_);
    c_re_.resize(D_ * M_);
    c_im_.resize(D_ * M_);
    for (int64_t d = 0; d < D_; ++d) {
      const double dt = std::exp(static_cast<double>(log_dt[d]));
      for (int64_t m = 0; m < M_; ++m) {
        const int64_t i = d * M_ + m;
        const double ar = -std::exp(static_cast<double>(log_a_real[i])), ai = a_imag[i];
        const double mag = std::exp(dt * ar), ang = dt * ai;
        const double abar_re = mag * std::cos(ang), abar_im = mag * std::sin(ang);
        // q = (Abar - 1) / A = (Abar - 1) conj(A) / |A|^2; |A|^2 > 0 because Re A < 0.
        const double den = ar * ar + ai * ai;
        const double q_re = ((abar_re - 1) * ar + abar_im * ai) / den;
        const double q_im = (abar_im * ar - (abar_re - 1) * ai) / den;
        const double br = b[2 * i], bi = b[2 * i + 1];
        a_re_[i] = static_cast<float>(abar_re);
        a_im_[i] = static_cast<float>(abar_im);
        b_re_[i] = static_cast<float>(q_re * br - q_im * bi);
        b_im_[i] = static_cast<float>(q_re * bi + q_im * br);
        c_re_[i] = c[2 * i];
        c_im_[i] = c[2 * i + 1];
      }
    }
  }
  int64_t state_size() const override { return 2 * D_ * M_; }
  // u = w_ih(x) [D] and the SSM output y [D].
  int64_t scratch_size() const override { return 2 * D_; }
  void reset(float* state) const override { std::fill(state, state + 2 * D_ * M_, 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float *u = scratch, *ys = scratch + D_;
    w_ih_(x, u);  // [D]
    scan(u, ys, state);
    gelu(ys, D_);  // exact (erf), as torch::gelu's default
    o_(ys, y);
  }
  // u = w_ih(x) and the SSM outputs, [B,D] each.
  int64_t batch_scratch_size(int64_t B) const override { return 2 * B * D_; }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t*) const override {
    float *U = scratch, *YS = scratch + B * D_;
    w_ih_.rows(X, U, B);
    for (int64_t i = 0; i < B; ++i) scan(U + i * D_, YS + i * D_, states[i]);
    for (int64_t i = 0; i < B; ++i) gelu(YS + i * D_, D_);
    o_.rows(YS, Y, B);
  }

 private:
  // One token of the diagonal SSM from u [D]: advances the state (s_re | s_im), writes ys [D]
  // (before the GELU).
  void scan(const float* u, float* ys, float* state) const {
    float *s_re = state, *s_im = state + D_ * M_;
    for (int64_t d = 0; d < D_; ++d) {
      float acc = 0;  // Re(sum_m C_m s'_m)
      for (int64_t m = 0; m < M_; ++m) {
        const int64_t i = d * M_ + m;
        const float re = a_re_[i] * s_re[i] - a_im_[i] * s_im[i] + b_re_[i] * u[d];
        const float im = a_re_[i] * s_im[i] + a_im_[i] * s_re[i] + b_im_[i] * u[d];
        s_re[i] = re;
        s_im[i] = im;
        acc += c_re_[i] * re - c_im_[i] * im;
      }
      ys[d] = 2 * acc + skip_[d] * u[d];
    }
  }

  int64_t D_, M_;
  Dense w_ih_, o_;
  std::vector<float> a_re_, a_im_, b_re_, b_im_;  // Abar, Bbar [D][M]
  std::vector<float> c_re_, c_im_;                // C [D][M]
  std::vector<float> skip_;                       // [D]
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(S4DImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastS4D>(cfg, w);
                          });

}  // namespace seqlab::infer
