// rfa: random Fourier features, "Random Feature Attention" (Peng et al. 2021, eq. 2 and 5):
//
//   phi(x) = sqrt(1/F) [sin(W x^), cos(W x^)],   x^ = x / |x|,   W_h ~ N(0, I) of shape [F,Dh]
//
// so that E_W[phi(q).phi(k)] = exp(-|q^ - k^|^2 / 2) = exp(q^.k^ - 1), the Gaussian kernel, which
// on unit vectors is softmax's exp(q.k) up to a constant that cancels in attention's ratio. As in
// the paper, q and k are l2-normalised before the map (sigma = 1). F_out = 2F.
//
// W is fixed: a buffer "w" [H,F,Dh], drawn from cfg.init_seed, so it is saved with the weights and
// a reloaded model computes the same features. phi(q).phi(k) can be negative for one W draw, so
// the normalizer of linear attention is not guaranteed positive with this map.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class RfaImpl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "rfa";  // --feature-map, written only here
  explicit RfaImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return 2 * feature_dim(cfg_); }

  torch::Tensor w;  // [H,F,Dh] buffer: random frequencies, N(0,1)

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
