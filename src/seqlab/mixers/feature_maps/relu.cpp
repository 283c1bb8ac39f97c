#include "seqlab/mixers/feature_maps/relu.h"

#include "seqlab/mixers/feature_maps/registry.h"

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(ReluImpl, {"relu(x)", 20, {}});

ReluImpl::ReluImpl(const MixerConfig& cfg) : cfg_(cfg) {}

torch::Tensor ReluImpl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  return torch::relu(x);  // [B,H,T,Dh]
}

}  // namespace seqlab
