#include "seqlab/mixers/feature_maps/elu1.h"

#include "seqlab/mixers/feature_maps/registry.h"

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(Elu1Impl, {"elu(x) + 1 (Katharopoulos et al. 2020)", 10, {"elu"}});

Elu1Impl::Elu1Impl(const MixerConfig& cfg) : cfg_(cfg) {}

torch::Tensor Elu1Impl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  return torch::elu(x) + 1.0;  // [B,H,T,Dh]
}

}  // namespace seqlab
