// hedgehog: the learned softmax-mimicking feature map of "The Hedgehog & the Porcupine"
// (Zhang et al. 2024, section 4.1):
//
//   u = W_h x + b_h,   phi(x) = [softmax(u), softmax(-u)]   (each softmax over the F features)
//
// per head, F_out = 2F. Queries and keys have separate maps, as in the paper's and LoLCATs'
// implementations (is_query selects): parameters "wq" [H,F,Dh], "bq" [H,F], "wk" [H,F,Dh],
// "bk" [H,F] (so "feature_map.wq" etc. inside linear attention; conversion relies on the names).
// W is initialised to the identity (the first min(F,Dh) diagonal entries are 1) and b to zero, so
// at initialisation phi(x) = [softmax(x), softmax(-x)] when F = Dh; distillation then trains the
// maps to match softmax attention. Inputs are used unscaled: W learns any scale. Each half sums to
// one, so phi is positive and bounded: no overflow, no offsets needed.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class HedgehogImpl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "hedgehog";  // --feature-map, written only here
  explicit HedgehogImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return 2 * feature_dim(cfg_); }

  torch::Tensor wq;  // [H,F,Dh] query map
  torch::Tensor bq;  // [H,F]
  torch::Tensor wk;  // [H,F,Dh] key map
  torch::Tensor bk;  // [H,F]

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
