// Fast GRU (mixers/gru.h has the maths, in torch.nn.GRU's convention): gates r|z|n stacked in that
// order in w_ih and w_hh, and the reset gate multiplies the hidden-side candidate after its bias:
//   n = tanh(xi_n + r * (W_hn h + b_hn)),   h' = (1 - z) n + z h = n + z (h - n),   y = o(h').
// State: h [D] (GRUState's h for one sequence).
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/gru.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

class FastGRU : public FastMixer {
 public:
  FastGRU(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        w_ih_(w, "w_ih", 3 * D_, D_),
        w_hh_(w, "w_hh", 3 * D_, D_),
        o_(w, "o", D_, D_) {}
  int64_t state_size() const override { return D_; }
  // Input side xi [3D] and hidden side hh [3D], rows r|z|n.
  int64_t scratch_size() const override { return 6 * D_; }
  void reset(float* state) const override { std::fill(state, state + D_, 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float* h = state;
    float *xi = scratch, *hh = scratch + 3 * D_;
    w_ih_(x, xi);  // [3D]
    w_hh_(h, hh);  // [3D]
    for (int64_t d = 0; d < D_; ++d) {
      const float r = sigmoid(xi[d] + hh[d]);
      const float z = sigmoid(xi[D_ + d] + hh[D_ + d]);
      const float n = std::tanh(xi[2 * D_ + d] + r * hh[2 * D_ + d]);
      h[d] = n + z * (h[d] - n);
    }
    o_(h, y);
  }
  // Rows' input sides [B,3D] and hidden sides [B,3D], the hidden rows gathered [B,D], outputs
  // gathered [B,D].
  int64_t batch_scratch_size(int64_t B) const override { return 8 * B * D_; }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t*) const override {
    float *XI = scratch, *HH = XI + 3 * B * D_, *Hs = HH + 3 * B * D_, *Hn = Hs + B * D_;
    for (int64_t i = 0; i < B; ++i) std::copy(states[i], states[i] + D_, Hs + i * D_);
    matmul_rows_blocked(w_ih_.w.data(), w_ih_.b.empty() ? nullptr : w_ih_.b.data(), X, XI, B,
                        3 * D_, D_);
    matmul_rows_blocked(w_hh_.w.data(), w_hh_.b.empty() ? nullptr : w_hh_.b.data(), Hs, HH, B,
                        3 * D_, D_);
    for (int64_t i = 0; i < B; ++i) {
      const float *xi = XI + 3 * i * D_, *hh = HH + 3 * i * D_;
      float* h = states[i];
      for (int64_t d = 0; d < D_; ++d) {
        const float r = sigmoid(xi[d] + hh[d]);
        const float z = sigmoid(xi[D_ + d] + hh[D_ + d]);
        const float n = std::tanh(xi[2 * D_ + d] + r * hh[2 * D_ + d]);
        h[d] = n + z * (h[d] - n);
      }
      std::copy(h, h + D_, Hn + i * D_);
    }
    matmul_rows_blocked(o_.w.data(), o_.b.empty() ? nullptr : o_.b.data(), Hn, Y, B, D_, D_);
  }

 private:
  int64_t D_;
  Dense w_ih_, w_hh_, o_;
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(GRUImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastGRU>(cfg, w);
                          });

}  // namespace seqlab::infer
