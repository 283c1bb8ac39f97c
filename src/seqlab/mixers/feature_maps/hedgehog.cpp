#include "seqlab/mixers/feature_maps/hedgehog.h"

#include "seqlab/mixers/feature_maps/registry.h"

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(
    HedgehogImpl, {"learned [softmax(Wx + b), softmax(-Wx - b)] (Zhang et al. 2024)", 60, {}});

HedgehogImpl::HedgehogImpl(const MixerConfig& cfg) : cfg_(cfg) {
  const int64_t H = cfg.n_head, F = feature_dim(cfg), Dh = cfg.d_head();
  auto eye = torch::eye(F, Dh).unsqueeze(0).repeat({H, 1, 1});  // [H,F,Dh]
  wq = register_parameter("wq", eye.clone());
  bq = register_parameter("bq", torch::zeros({H, F}));
  wk = register_parameter("wk", eye.clone());
  bk = register_parameter("bk", torch::zeros({H, F}));
}

torch::Tensor HedgehogImpl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  const auto& w = is_query ? wq : wk;
  const auto& b = is_query ? bq : bk;
  auto u = per_head_linear(x, w) + b.unsqueeze(1);                         // [B,H,T,F]
  return torch::cat({torch::softmax(u, -1), torch::softmax(-u, -1)}, -1);  // [B,H,T,2F]
}

}  // namespace seqlab
