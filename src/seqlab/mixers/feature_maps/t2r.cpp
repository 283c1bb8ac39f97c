#include "seqlab/mixers/feature_maps/t2r.h"

#include "seqlab/mixers/feature_maps/registry.h"

#include <cmath>

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(T2rImpl, {"learned relu(Wx + b), shared by q and k (Kasai et al. 2021)",
                                      50,
                                      {}});

T2rImpl::T2rImpl(const MixerConfig& cfg) : cfg_(cfg) {
  const int64_t H = cfg.n_head, F = feature_dim(cfg), Dh = cfg.d_head();
  const double bound = 1.0 / std::sqrt(static_cast<double>(Dh));
  w = register_parameter("w", torch::empty({H, F, Dh}).uniform_(-bound, bound));
  b = register_parameter("b", torch::empty({H, F}).uniform_(-bound, bound));
}

torch::Tensor T2rImpl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  auto wx = per_head_linear(x, w);          // [B,H,T,F]
  return torch::relu(wx + b.unsqueeze(1));  // [B,H,T,F]
}

}  // namespace seqlab
