#include "seqlab/mixers/feature_maps/elu1.h"

namespace seqlab {

Elu1Impl::Elu1Impl(const MixerConfig& cfg) : cfg_(cfg) {}

torch::Tensor Elu1Impl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, "elu1");
  return torch::elu(x) + 1.0;  // [B,H,T,Dh]
}

}  // namespace seqlab
