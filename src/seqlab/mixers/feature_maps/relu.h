// relu: phi(x) = max(x, 0), the simplest non-negative feature map (used e.g. by Qin et al. 2022,
// cosFormer, and as a baseline in Katharopoulos et al. 2020). Parameter-free, elementwise;
// F_out = Dh and d_feature is ignored. Inputs are used unscaled.
//
// phi can be all zero for a query, so the normalizer phi(q).z can be 0: linear attention's eps
// then makes that output 0 instead of NaN.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class ReluImpl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "relu";  // --feature-map, written only here
  explicit ReluImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return cfg_.d_head(); }

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
