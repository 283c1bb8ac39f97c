#include "seqlab/mixers/feature_maps/relu.h"

namespace seqlab {

ReluImpl::ReluImpl(const MixerConfig& cfg) : cfg_(cfg) {}

torch::Tensor ReluImpl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, "relu");
  return torch::relu(x);  // [B,H,T,Dh]
}

}  // namespace seqlab
