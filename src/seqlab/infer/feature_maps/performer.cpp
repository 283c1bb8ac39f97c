// Fast performer (mixers/feature_maps/performer.h): x~ = x Dh^-1/4, log phi = W_h x~ - |x~|^2/2 -
// log(F)/2 with W = feature_map.w [H,F,Dh]; F' = F. Exponential: the largest log-feature is removed
// before exp and handed back for keys (linear attention's running-max offset).
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/performer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace seqlab::infer {

namespace {

class FastPerformer : public FastFeatureMap {
 public:
  FastPerformer(const MixerConfig& cfg, const Weights& w)
      : Dh_(cfg.d_head()),
        F_(feature_dim(cfg)),
        w_(w.take("feature_map.w", {cfg.n_head, F_, Dh_})) {}
  int64_t out_dim() const override { return F_; }
  bool exponential() const override { return true; }
  void apply(const float* x, int64_t h, bool, float* out, float* tmp,
             float* max_log) const override {
    const float s = std::pow(static_cast<float>(Dh_), -0.25f);
    for (int64_t d = 0; d < Dh_; ++d) tmp[d] = x[d] * s;
    const float half_sq = 0.5f * dot(tmp, tmp, Dh_);
    const float half_log_f = 0.5f * std::log(static_cast<float>(F_));
    matvec(w_.data() + h * F_ * Dh_, nullptr, tmp, out, F_, Dh_);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t f = 0; f < F_; ++f) mx = std::max(mx, out[f] -= half_sq + half_log_f);
    for (int64_t f = 0; f < F_; ++f) out[f] = std::exp(out[f] - mx);
    if (max_log) *max_log = mx;
  }

 private:
  int64_t Dh_, F_;
  std::vector<float> w_;  // [H,F,Dh]
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(PerformerImpl, [](const MixerConfig& cfg, const Weights& w) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastPerformer>(cfg, w));
});

}  // namespace seqlab::infer
