// FeatureMap: the kernel feature map phi of linear attention (Katharopoulos et al. 2020, eq. 4).
//
// Linear attention replaces exp(q.k / sqrt(Dh)) by phi(q).phi(k). A feature map is a small module
// applied per head to the queries and the keys:
//
//   forward(x, is_query)   x [B,H,T,Dh] -> phi(x) [B,H,T,F_out]
//
// The layout is fixed: heads on dim 1, time on dim 2, head width last. The recurrent form passes
// T = 1. Per-head parameters and buffers are shaped [H,F,Dh] (+ [H,F]), so that the map of head h
// is the slice [h]. F = cfg.d_feature, or d_head when it is 0; out_dim() is F_out (2F for the maps
// that concatenate two halves, Dh for the parameter-free elementwise maps).
//
// Input scaling: linear attention hands the map the raw per-head projections q, k. Any scaling is
// the map's own business and is written in its header (rfa normalises to unit length; performer
// scales by Dh^-1/4 so that its kernel estimates softmax's exp(q.k / sqrt(Dh))).
//
// Exponential maps (performer) can overflow in exp. They say so with exponential() and provide
// log_features(): forward() == exp(log_features()). Linear attention then subtracts offsets in log
// space before exponentiating (see linear_attention.h); the offsets cancel in its ratio.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/mixers/mixer_config.h"

#include <torch/torch.h>

#include <memory>

namespace seqlab {

class FeatureMapImpl : public torch::nn::Module {
 public:
  // x: [B,H,T,Dh] -> [B,H,T,F_out]. is_query selects the query map for maps that have separate
  // query and key maps (hedgehog); the others ignore it.
  virtual torch::Tensor forward(const torch::Tensor& x, bool is_query) = 0;
  // F_out: the width of phi(x) per head.
  virtual int64_t out_dim() const = 0;
  // Whether phi = exp(log_features(x)) and may overflow before any offset is applied.
  virtual bool exponential() const { return false; }
  // x: [B,H,T,Dh] -> log phi(x) [B,H,T,F_out]. Only for exponential maps.
  virtual torch::Tensor log_features(const torch::Tensor& x, bool is_query) {
    fail("feature map has no log-space form (it is not exponential)");
  }
};

using FeatureMap = std::shared_ptr<FeatureMapImpl>;

// F: the feature width per head before any doubling (cfg.d_feature, or d_head when it is 0).
inline int64_t feature_dim(const MixerConfig& cfg) {
  return cfg.d_feature > 0 ? cfg.d_feature : cfg.d_head();
}

// Checks that x is [B,H,T,Dh] for this config; `map` names the map in the message.
inline void check_feature_input(const torch::Tensor& x, const MixerConfig& cfg, const char* map) {
  SEQLAB_CHECK(x.dim() == 4 && x.size(1) == cfg.n_head && x.size(3) == cfg.d_head(),
               "{} feature map: expected input [B,{},T,{}], got {}", map, cfg.n_head, cfg.d_head(),
               fmt::join(x.sizes().vec(), ","));
}

// The per-head linear map x W_h^T: x [B,H,T,Dh], w [H,F,Dh] -> [B,H,T,F].
inline torch::Tensor per_head_linear(const torch::Tensor& x, const torch::Tensor& w) {
  return torch::matmul(x, w.transpose(1, 2));  // [B,H,T,Dh] @ [H,Dh,F] -> [B,H,T,F]
}

}  // namespace seqlab
