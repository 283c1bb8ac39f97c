// Fast LSTM (mixers/lstm.h has the maths, in torch.nn.LSTM's convention): gates i|f|g|o stacked in
// that order in w_ih and w_hh (both with biases),
//   c' = sigmoid(f) c + sigmoid(i) tanh(g),   h' = sigmoid(o) tanh(c'),   y = o_proj(h').
// State: h [D], then c [D] (LSTMState's h and c for one sequence, in for_each order).
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/lstm.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

class FastLSTM : public FastMixer {
 public:
  FastLSTM(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        w_ih_(w, "w_ih", 4 * D_, D_),
        w_hh_(w, "w_hh", 4 * D_, D_),
        o_(w, "o", D_, D_) {}
  int64_t state_size() const override { return 2 * D_; }
  // Input side xi [4D] and hidden side hh [4D], rows i|f|g|o.
  int64_t scratch_size() const override { return 8 * D_; }
  void reset(float* state) const override { std::fill(state, state + 2 * D_, 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float *h = state, *c = state + D_;
    float *xi = scratch, *hh = scratch + 4 * D_;
    w_ih_(x, xi);  // [4D]
    w_hh_(h, hh);  // [4D]; reads the old h, so h can be overwritten below
    for (int64_t d = 0; d < D_; ++d) {
      const float i_gate = sigmoid(xi[d] + hh[d]);
      const float f_gate = sigmoid(xi[D_ + d] + hh[D_ + d]);
      const float cand = std::tanh(xi[2 * D_ + d] + hh[2 * D_ + d]);
      const float o_gate = sigmoid(xi[3 * D_ + d] + hh[3 * D_ + d]);
      c[d] = f_gate * c[d] + i_gate * cand;
      h[d] = o_gate * std::tanh(c[d]);
    }
    o_(h, y);
  }

 private:
  int64_t D_;
  Dense w_ih_, w_hh_, o_;  // o_ is the output projection (the module member `o`)
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(LSTMImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastLSTM>(cfg, w);
                          });

}  // namespace seqlab::infer
