#include "seqlab/mixers/feature_maps/rfa.h"

#include "seqlab/mixers/feature_maps/registry.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(
    RfaImpl, {"random Fourier features of unit q, k: Gaussian kernel (Peng et al. 2021)", 30, {}});

RfaImpl::RfaImpl(const MixerConfig& cfg) : cfg_(cfg) {
  auto gen = at::detail::createCPUGenerator(cfg.init_seed);
  w = register_buffer("w", torch::randn({cfg.n_head, feature_dim(cfg), cfg.d_head()}, gen));
}

torch::Tensor RfaImpl::forward(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  auto xn = x / x.norm(2, -1, true).clamp_min(1e-12);  // [B,H,T,Dh], unit length
  auto wx = per_head_linear(xn, w.to(x.dtype()));      // [B,H,T,F]
  const double scale = 1.0 / std::sqrt(static_cast<double>(feature_dim(cfg_)));
  return torch::cat({torch::sin(wx), torch::cos(wx)}, -1) * scale;  // [B,H,T,2F]
}

}  // namespace seqlab
