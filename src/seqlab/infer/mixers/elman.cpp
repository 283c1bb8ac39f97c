// Fast Elman RNN (mixers/elman.h has the maths): h_t = tanh(w_ih x_t + w_hh h_{t-1}), y_t = o(h_t).
// State: h [D] (ElmanState's h for one sequence).
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/elman.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

class FastElman : public FastGatedRnn {
 public:
  FastElman(const MixerConfig& cfg, const Weights& w) : FastGatedRnn(w, cfg.d_model, 1) {}
  int64_t state_size() const override { return D_; }
  void reset(float* state) const override { std::fill(state, state + D_, 0.0f); }

 private:
  // h from the input side xi [D] and hidden side hh [D] (both with their biases).
  void update(const float* xi, const float* hh, float* h) const override {
    for (int64_t d = 0; d < D_; ++d) h[d] = std::tanh(xi[d] + hh[d]);
  }
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(ElmanImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastElman>(cfg, w);
                          });

}  // namespace seqlab::infer
