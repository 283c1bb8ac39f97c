// Fast Elman RNN (mixers/elman.h has the maths): h_t = tanh(w_ih x_t + w_hh h_{t-1}), y_t = o(h_t).
// State: h [D] (ElmanState's h for one sequence).
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/elman.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

class FastElman : public FastMixer {
 public:
  FastElman(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model), w_ih_(w, "w_ih", D_, D_), w_hh_(w, "w_hh", D_, D_), o_(w, "o", D_, D_) {}
  int64_t state_size() const override { return D_; }
  // Input side w_ih x and hidden side w_hh h, [D] each.
  int64_t scratch_size() const override { return 2 * D_; }
  void reset(float* state) const override { std::fill(state, state + D_, 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float* h = state;
    float *xi = scratch, *hh = scratch + D_;
    w_ih_(x, xi);  // [D], bias b_ih included
    w_hh_(h, hh);  // [D], bias b_hh included; reads the old h
    for (int64_t d = 0; d < D_; ++d) h[d] = std::tanh(xi[d] + hh[d]);
    o_(h, y);
  }

 private:
  int64_t D_;
  Dense w_ih_, w_hh_, o_;
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(ElmanImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastElman>(cfg, w);
                          });

}  // namespace seqlab::infer
