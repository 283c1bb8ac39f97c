// Fast QRNN (mixers/qrnn.h has the maths): gates from a width-k causal convolution over the input,
// written as one Dense on the window [x_{t-1}; x_t] (k = 2) or on x_t alone (k = 1), rows z|f
// (f-pooling) or z|f|o (fo-pooling), then elementwise pooling
//   c' = f c + (1 - f) z = z + f (c - z),   h = sigmoid(o) c' (fo) or c' (f),   y = o_proj(h).
// State: c [D], then (window 2 only) x_prev [D], the previous token's input, zero before the first
// (QRNNState's c and x_prev for one sequence, in for_each order).
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/qrnn.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

class FastQRNN : public FastMixer {
 public:
  FastQRNN(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model), K_(cfg.qrnn_window), G_(cfg.qrnn_pooling == "fo" ? 3 : 2) {
    SEQLAB_CHECK(K_ == 1 || K_ == 2, "qrnn: window must be 1 or 2, got {}", K_);
    SEQLAB_CHECK(cfg.qrnn_pooling == "f" || cfg.qrnn_pooling == "fo",
                 "qrnn: pooling must be f or fo, got '{}'", cfg.qrnn_pooling);
    w_ih_ = Dense(w, "w_ih", G_ * D_, K_ * D_);
    o_ = Dense(w, "o", D_, D_);
  }
  int64_t state_size() const override { return K_ * D_; }
  // The window [x_{t-1}; x_t] [2D] (window 2 only), gate pre-activations [G*D], h [D].
  int64_t scratch_size() const override { return (K_ == 2 ? 2 * D_ : 0) + G_ * D_ + D_; }
  void reset(float* state) const override { std::fill(state, state + K_ * D_, 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float* c = state;
    float* g = scratch;
    float* h = g + G_ * D_;
    if (K_ == 2) {
      float* x_prev = state + D_;
      float* win = h + D_;
      std::copy(x_prev, x_prev + D_, win);  // columns x_{t-1} | x_t, as w_ih's
      std::copy(x, x + D_, win + D_);
      std::copy(x, x + D_, x_prev);
      w_ih_(win, g);  // [G*D]
    } else {
      w_ih_(x, g);  // [G*D]
    }
    pool(g, c, h);
    o_(h, y);
  }
  // The rows' windows [B, K*D], gate pre-activations [B, G*D], h [B, D].
  int64_t batch_scratch_size(int64_t B) const override { return B * (K_ * D_ + G_ * D_ + D_); }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t*) const override {
    float *win = scratch, *g = win + B * K_ * D_, *h = g + B * G_ * D_;
    for (int64_t i = 0; i < B; ++i) {
      const float* x = X + i * D_;
      float* w = win + i * K_ * D_;
      if (K_ == 2) {  // columns x_{t-1} | x_t, as w_ih's
        float* x_prev = states[i] + D_;
        std::copy(x_prev, x_prev + D_, w);
        std::copy(x, x + D_, w + D_);
        std::copy(x, x + D_, x_prev);
      } else {
        std::copy(x, x + D_, w);
      }
    }
    w_ih_.rows(win, g, B);
    for (int64_t i = 0; i < B; ++i) pool(g + i * G_ * D_, states[i], h + i * D_);
    o_.rows(h, Y, B);
  }

 private:
  // The pooling from the gate pre-activations g [G*D] (z|f|o): advances c [D], writes h [D].
  void pool(const float* g, float* c, float* h) const {
    for (int64_t d = 0; d < D_; ++d) {
      const float z = std::tanh(g[d]);
      const float f = sigmoid(g[D_ + d]);
      c[d] = z + f * (c[d] - z);
      h[d] = G_ == 3 ? sigmoid(g[2 * D_ + d]) * c[d] : c[d];
    }
  }

  int64_t D_, K_, G_;  // width, window (1 | 2), gates (2 = z|f, 3 = z|f|o)
  Dense w_ih_, o_;     // o_ is the output projection (the module member `o`)
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(QRNNImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastQRNN>(cfg, w);
                          });

}  // namespace seqlab::infer
