// The normalisation layers of a block: LayerNorm (Ba et al. 2016; GPT-2, GPT-NeoX) or RMSNorm
// (Zhang & Sennrich 2019; Llama, Qwen2, Mistral), chosen by ModelConfig::norm, with eps =
// ModelConfig::norm_eps.
//
//   layer  y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias     weight, bias [D]
//   rms    y = weight * (x / sqrt(mean(x^2) + eps))                    weight [D]
//
// RMSNorm computes in fp32 and casts back, as transformers' LlamaRMSNorm does. Parameter names
// ("weight", "bias") are those of torch::nn::LayerNorm, so checkpoints keep their names.
#pragma once

#include <torch/torch.h>

#include <string>

namespace seqlab {

struct NormImpl : torch::nn::Module {
  NormImpl(int64_t d_model, std::string kind, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // [...,D] -> [...,D]
  torch::Tensor weight;                           // [D]
  torch::Tensor bias;                             // [D] (layer only; undefined for rms)
  std::string kind;
  double eps;
};
TORCH_MODULE(Norm);

}  // namespace seqlab
