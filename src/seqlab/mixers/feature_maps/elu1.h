// elu1: phi(x) = elu(x) + 1, the feature map of "Transformers are RNNs" (Katharopoulos et al.
// 2020, section 3.2.1). Positive, parameter-free, elementwise; F_out = Dh and d_feature is ignored.
// Inputs are used unscaled.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class Elu1Impl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "elu1";  // --feature-map, written only here
  explicit Elu1Impl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return cfg_.d_head(); }

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
