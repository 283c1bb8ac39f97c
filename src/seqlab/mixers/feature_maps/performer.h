// performer: FAVOR+ positive orthogonal random features, "Rethinking Attention with Performers"
// (Choromanski et al. 2021, lemma 1 and section 2.4):
//
//   phi(x) = exp(W x~ - |x~|^2 / 2) / sqrt(F),   x~ = x * Dh^-1/4
//
// so that E_W[phi(q).phi(k)] = exp(q~.k~) = exp(q.k / sqrt(Dh)): softmax attention's kernel,
// estimated with positive features (no negative normalizers, unlike rfa). F_out = F.
//
// W is fixed: a buffer "w" [H,F,Dh], drawn from cfg.init_seed. Per head its rows come in blocks
// of Dh mutually orthogonal directions (QR of a Gaussian matrix), each row rescaled to the norm of
// an independent Gaussian vector, so every row is marginally N(0, I) while rows within a block are
// orthogonal: the variance reduction of FAVOR+'s orthogonal random features.
//
// The exp can overflow for large inputs. The map is exponential(): log_features() returns
// W x~ - |x~|^2 / 2 - log(F) / 2, and linear attention subtracts offsets before the exp.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

namespace seqlab {

class PerformerImpl : public FeatureMapImpl {
 public:
  static constexpr const char* kName = "performer";  // --feature-map, written only here
  explicit PerformerImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x, bool is_query) override;
  int64_t out_dim() const override { return feature_dim(cfg_); }
  bool exponential() const override { return true; }
  torch::Tensor log_features(const torch::Tensor& x, bool is_query) override;

  torch::Tensor w;  // [H,F,Dh] buffer: orthogonal random features

 private:
  MixerConfig cfg_;
};

}  // namespace seqlab
