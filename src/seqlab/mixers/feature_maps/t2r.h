// t2r: the learned feature map of "Finetuning Pretrained Transformers into RNNs" (Kasai et al.
// 2021, eq. 4):
//
//   phi(x) = relu(W_h x + b_h),   W [H,F,Dh], b [H,F], learned
//
// One map per head, shared by queries and keys (is_query is ignored), as in the paper. Inputs are
// used unscaled: W learns any scale. F_out = F. Parameter names are a contract that conversion
// relies on: "w" [H,F,Dh] and "b" [H,F] (so "feature_map.w", "feature_map.b" inside linear
// attention). Initialised like torch::nn::Linear(Dh, F): U(-1/sqrt(Dh), 1/sqrt(Dh)), from the
// global torch RNG like the q, k, v, o projections.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class T2rImpl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "t2r";  // --feature-map, written only here
  explicit T2rImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return feature_dim(cfg_); }

  torch::Tensor w;  // [H,F,Dh]
  torch::Tensor b;  // [H,F]

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
