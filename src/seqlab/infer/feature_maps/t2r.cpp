// Fast t2r (mixers/feature_maps/t2r.h): phi(x) = relu(W_h x + b_h), W = feature_map.w [H,F,Dh],
// b = feature_map.b [H,F], shared by queries and keys; F' = F.
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/t2r.h"

#include <algorithm>

namespace seqlab::infer {

namespace {

class FastT2r : public FastFeatureMap {
 public:
  FastT2r(const MixerConfig& cfg, const Weights& w)
      : Dh_(cfg.d_head()),
        F_(feature_dim(cfg)),
        w_(w.take("feature_map.w", {cfg.n_head, F_, Dh_})),
        b_(w.take("feature_map.b", {cfg.n_head, F_})) {}
  int64_t out_dim() const override { return F_; }
  void apply(const float* x, int64_t h, bool, float* out, float*, float*) const override {
    matvec(w_.data() + h * F_ * Dh_, b_.data() + h * F_, x, out, F_, Dh_);
    for (int64_t f = 0; f < F_; ++f) out[f] = std::max(out[f], 0.0f);
  }

 private:
  int64_t Dh_, F_;
  std::vector<float> w_, b_;  // [H,F,Dh], [H,F]
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(T2rImpl, [](const MixerConfig& cfg, const Weights& w) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastT2r>(cfg, w));
});

}  // namespace seqlab::infer
