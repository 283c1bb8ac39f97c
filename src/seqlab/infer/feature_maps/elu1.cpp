// Fast elu1 (mixers/feature_maps/elu1.h): phi(x) = elu(x) + 1, elementwise, F' = Dh.
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/elu1.h"

#include <cmath>

namespace seqlab::infer {

namespace {

class FastElu1 : public FastFeatureMap {
 public:
  explicit FastElu1(const MixerConfig& cfg) : Dh_(cfg.d_head()) {}
  int64_t out_dim() const override { return Dh_; }
  void apply(const float* x, int64_t, bool, float* out, float*, float*) const override {
    for (int64_t d = 0; d < Dh_; ++d) out[d] = x[d] > 0 ? x[d] + 1.0f : std::exp(x[d]);
  }

 private:
  int64_t Dh_;
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(Elu1Impl, [](const MixerConfig& cfg, const Weights&) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastElu1>(cfg));
});

}  // namespace seqlab::infer
