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

class FastGRU : public FastGatedRnn {
 public:
  FastGRU(const MixerConfig& cfg, const Weights& w) : FastGatedRnn(w, cfg.d_model, 3) {}
  int64_t state_size() const override { return D_; }
  void reset(float* state) const override { std::fill(state, state + D_, 0.0f); }

 private:
  // h from the gates' input side xi [3D] and hidden side hh [3D] (rows r|z|n).
  void update(const float* xi, const float* hh, float* h) const override {
    for (int64_t d = 0; d < D_; ++d) {
      const float r = sigmoid(xi[d] + hh[d]);
      const float z = sigmoid(xi[D_ + d] + hh[D_ + d]);
      const float n = std::tanh(xi[2 * D_ + d] + r * hh[2 * D_ + d]);
      h[d] = n + z * (h[d] - n);
    }
  }
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(GRUImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastGRU>(cfg, w);
                          });

}  // namespace seqlab::infer
