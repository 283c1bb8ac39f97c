// Fast rfa (mixers/feature_maps/rfa.h): x^ = x / |x|, phi = sqrt(1/F) [sin(W_h x^), cos(W_h x^)],
// W = feature_map.w [H,F,Dh]; F' = 2F.
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/rfa.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

class FastRfa : public FastFeatureMap {
 public:
  FastRfa(const MixerConfig& cfg, const Weights& w)
      : Dh_(cfg.d_head()),
        F_(feature_dim(cfg)),
        w_(w.take("feature_map.w", {cfg.n_head, F_, Dh_})) {}
  int64_t out_dim() const override { return 2 * F_; }
  void apply(const float* x, int64_t h, bool, float* out, float* tmp, float*) const override {
    float n = std::sqrt(dot(x, x, Dh_));
    n = std::max(n, 1e-12f);
    for (int64_t d = 0; d < Dh_; ++d) tmp[d] = x[d] / n;
    matvec(w_.data() + h * F_ * Dh_, nullptr, tmp, out, F_, Dh_);
    const float scale = 1.0f / std::sqrt(static_cast<float>(F_));
    for (int64_t f = 0; f < F_; ++f) {
      const float a = out[f];
      out[f] = std::sin(a) * scale;
      out[F_ + f] = std::cos(a) * scale;
    }
  }

 private:
  int64_t Dh_, F_;
  std::vector<float> w_;  // [H,F,Dh]
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(RfaImpl, [](const MixerConfig& cfg, const Weights& w) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastRfa>(cfg, w));
});

}  // namespace seqlab::infer
