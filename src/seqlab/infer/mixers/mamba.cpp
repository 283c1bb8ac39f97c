// Fast Mamba (mixers/mamba.h has the maths), E = expand D channels, N state, K = d_conv taps,
// R = ceil(D/16):
//   [xs; z] = in_proj(x)                          [2E], no bias
//   xc = silu(conv1d.bias + sum_k conv1d.weight[:,0,k] window_k)     window = last K inputs, oldest
//                                                                    first (the causal conv)
//   [dt_in; B; C] = x_proj(xc)                     [R + 2N], no bias
//   delta = softplus(dt_proj(dt_in))               [E]
//   h_en = exp(delta_e A_en) h_en + delta_e xc_e B_n,   A = -exp(a_log)     (selective scan)
//   y_e = (sum_n C_n h_en + skip_e xc_e) silu(z_e),    out = o(y)
// State: conv [E][K-1] (the last K-1 conv inputs, oldest first), then h [E][N] (MambaState's conv
// and h for one sequence, in for_each order).
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/mixers/mamba.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

float silu(float v) {
  return v / (1.0f + std::exp(-v));
}
// torch::softplus with beta 1, threshold 20: linear above the threshold.
float softplus(float v) {
  return v > 20.0f ? v : std::log1p(std::exp(v));
}

class FastMamba : public FastMixer {
 public:
  FastMamba(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        E_(cfg.expand * cfg.d_model),
        N_(cfg.d_state),
        K_(cfg.d_conv),
        R_((cfg.d_model + 15) / 16) {
    SEQLAB_CHECK(E_ > 0 && N_ > 0 && K_ > 0, "mamba: expand, d_state and d_conv must be positive");
    in_proj_ = Dense(w, "in_proj", 2 * E_, D_);
    x_proj_ = Dense(w, "x_proj", R_ + 2 * N_, E_);
    dt_proj_ = Dense(w, "dt_proj", E_, R_);
    o_ = Dense(w, "o", D_, E_);
    conv_w_ = w.take("conv1d.weight", {E_, 1, K_});
    conv_b_ = w.take("conv1d.bias", {E_});
    skip_ = w.take("skip", {E_});
    a_ = w.take("a_log", {E_, N_});
    for (float& a : a_) a = -std::exp(a);  // A = -exp(a_log), fixed per token
  }
  int64_t state_size() const override { return E_ * (K_ - 1) + E_ * N_; }
  // xs|z [2E], xc [E], dt_in|B|C [R+2N], delta [E], y [E].
  int64_t scratch_size() const override { return 5 * E_ + R_ + 2 * N_; }
  void reset(float* state) const override { std::fill(state, state + state_size(), 0.0f); }

  void step(const float* x, float* out, float* state, float* scratch, int64_t) const override {
    float *xz = scratch, *xc = xz + 2 * E_, *dbc = xc + E_, *delta = dbc + R_ + 2 * N_,
          *y = delta + E_;
    in_proj_(x, xz);  // [2E]: xs | z
    conv(xz, xc, state);
    x_proj_(xc, dbc);      // [R+2N]: dt_in | B | C
    dt_proj_(dbc, delta);  // [E], reads dt_in = dbc[0, R)
    scan(xz, xc, dbc, delta, y, state);
    o_(y, out);
  }
  // Per row as step's scratch, plus dt_in gathered [R] (dt_proj's rows must be contiguous).
  int64_t batch_scratch_size(int64_t B) const override { return B * (scratch_size() + R_); }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t*) const override {
    float *XZ = scratch, *XC = XZ + B * 2 * E_, *DBC = XC + B * E_, *DT = DBC + B * (R_ + 2 * N_),
          *DL = DT + B * R_, *YS = DL + B * E_;
    const int64_t nd = R_ + 2 * N_;
    in_proj_.rows(X, XZ, B);
    for (int64_t i = 0; i < B; ++i) conv(XZ + i * 2 * E_, XC + i * E_, states[i]);
    x_proj_.rows(XC, DBC, B);
    for (int64_t i = 0; i < B; ++i) std::copy(DBC + i * nd, DBC + i * nd + R_, DT + i * R_);
    dt_proj_.rows(DT, DL, B);
    for (int64_t i = 0; i < B; ++i)
      scan(XZ + i * 2 * E_, XC + i * E_, DBC + i * nd, DL + i * E_, YS + i * E_, states[i]);
    o_.rows(YS, Y, B);
  }

 private:
  // The depthwise causal conv over [window; xs] (K taps, oldest first) into xc [E] (after SiLU),
  // sliding each channel's window (the state's first E (K-1) floats).
  void conv(const float* xz, float* xc, float* state) const {
    for (int64_t e = 0; e < E_; ++e) {
      const float* wk = conv_w_.data() + e * K_;
      float* win = state + e * (K_ - 1);
      float acc = 0;
      for (int64_t k = 0; k + 1 < K_; ++k) acc += win[k] * wk[k];
      acc += xz[e] * wk[K_ - 1];
      xc[e] = silu(acc + conv_b_[e]);
      if (K_ > 1) {
        std::copy(win + 1, win + K_ - 1, win);
        win[K_ - 2] = xz[e];
      }
    }
  }
  // The selective scan from xz (z at E..2E), xc, dbc (B at R, C at R+N) and delta [E]: advances h
  // (the state after the conv windows), writes y [E].
  void scan(const float* xz, const float* xc, const float* dbc, const float* delta, float* y,
            float* state) const {
    float* h = state + E_ * (K_ - 1);
    const float* z = xz + E_;
    const float* B = dbc + R_;
    const float* C = B + N_;
    for (int64_t e = 0; e < E_; ++e) {
      const float dl = softplus(delta[e]);
      const float du = dl * xc[e];
      const float acc = scan_channel(a_.data() + e * N_, dl, du, B, C, h + e * N_, N_);
      y[e] = (acc + skip_[e] * xc[e]) * silu(z[e]);
    }
  }

  int64_t D_, E_, N_, K_, R_;
  Dense in_proj_, x_proj_, dt_proj_, o_;
  std::vector<float> conv_w_, conv_b_;  // [E][K] (conv1d.weight [E,1,K]), [E]
  std::vector<float> skip_;             // [E]
  std::vector<float> a_;                // [E][N]: A = -exp(a_log)
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(MambaImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastMamba>(cfg, w);
                          });

}  // namespace seqlab::infer
