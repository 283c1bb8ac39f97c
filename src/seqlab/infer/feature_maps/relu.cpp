// Fast relu (mixers/feature_maps/relu.h): phi(x) = max(x, 0), elementwise, F' = Dh.
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/relu.h"

#include <algorithm>

namespace seqlab::infer {

namespace {

class FastRelu : public FastFeatureMap {
 public:
  explicit FastRelu(const MixerConfig& cfg) : Dh_(cfg.d_head()) {}
  int64_t out_dim() const override { return Dh_; }
  void apply(const float* x, int64_t, bool, float* out, float*, float*) const override {
    for (int64_t d = 0; d < Dh_; ++d) out[d] = std::max(x[d], 0.0f);
  }

 private:
  int64_t Dh_;
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(ReluImpl, [](const MixerConfig& cfg, const Weights&) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastRelu>(cfg));
});

}  // namespace seqlab::infer
