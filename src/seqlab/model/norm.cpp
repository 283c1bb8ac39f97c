#include "seqlab/model/norm.h"

#include "seqlab/core/error.h"

namespace seqlab {

NormImpl::NormImpl(int64_t d_model, std::string kind_, double eps_)
    : kind(std::move(kind_)), eps(eps_) {
  SEQLAB_CHECK(kind == "layer" || kind == "rms", "norm must be layer or rms, got '{}'", kind);
  weight = register_parameter("weight", torch::ones({d_model}));
  if (kind == "layer") bias = register_parameter("bias", torch::zeros({d_model}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (kind == "layer") return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
  auto xf = x.to(torch::kFloat32);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps);  // [...,D]
  return weight * y.to(x.dtype());
}

}  // namespace seqlab
