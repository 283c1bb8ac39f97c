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

class FastLSTM : public FastGatedRnn {
 public:
  FastLSTM(const MixerConfig& cfg, const Weights& w) : FastGatedRnn(w, cfg.d_model, 4) {}
  int64_t state_size() const override { return 2 * D_; }
  void reset(float* state) const override { std::fill(state, state + 2 * D_, 0.0f); }

 private:
  // h and c (state = h | c) from the gates' input side xi [4D] and hidden side hh [4D] (rows
  // i|f|g|o).
  void update(const float* xi, const float* hh, float* state) const override {
    float *h = state, *c = state + D_;
    for (int64_t d = 0; d < D_; ++d) {
      const float i_gate = sigmoid(xi[d] + hh[d]);
      const float f_gate = sigmoid(xi[D_ + d] + hh[D_ + d]);
      const float cand = std::tanh(xi[2 * D_ + d] + hh[2 * D_ + d]);
      const float o_gate = sigmoid(xi[3 * D_ + d] + hh[3 * D_ + d]);
      c[d] = f_gate * c[d] + i_gate * cand;
      h[d] = o_gate * std::tanh(c[d]);
    }
  }
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(LSTMImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastLSTM>(cfg, w);
                          });

}  // namespace seqlab::infer
