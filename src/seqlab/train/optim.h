// AdamW (Loshchilov & Hutter 2019) over named parameters, with a state that is plain tensors by
// name so that train_state.safetensors can hold it and a resumed run continues bitwise exactly.
//
// Per parameter p with gradient g, at step t (1-based):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * ( m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + wd * p )
// Weight decay applies to matrices only (dim >= 2), not to biases, norms or 1-d parameters.
// The update is tested against torch::optim::AdamW (tests/test_optim.cpp).
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace seqlab {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, AdamWOptions opt);
  // Applies one update with learning rate lr to every parameter that has a gradient.
  void step(double lr);
  void zero_grad();
  int64_t steps() const { return t_; }

  // The state as named tensors: "adam.t", "adam.m.<param>", "adam.v.<param>".
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  // Restores a state written by state(); every parameter's moments must be present.
  void load_state(const std::map<std::string, torch::Tensor>& s, const std::string& source);

 private:
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<torch::Tensor> m_, v_;
  AdamWOptions opt_;
  int64_t t_ = 0;
};

// Clips the global L2 norm of the gradients to max_norm (no-op when max_norm <= 0); returns the
// norm before clipping.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

// Linear warmup for `warmup` steps, then cosine decay to min_ratio * lr at `total` steps.
double lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_ratio);

}  // namespace seqlab
