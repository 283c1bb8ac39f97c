// SWAG: a Gaussian over the weights, fitted to the SGD trajectory (Maddox et al. 2019), as used
// for uncertainty-aware NLI by Talman et al. (2023).
//
// From snapshots w_1..w_n of the trainable parameters (one every --swag-every steps after
// --swag-start) the collector keeps, per parameter and never as a dense covariance:
//
//   mean     w̄ = (1/n) Σ w_i                      running: w̄ += (w - w̄) / n
//   sq_mean  (1/n) Σ w_i²                          running, elementwise
//   dev      the last K deviations w_i - w̄_i (w̄_i = the mean after w_i): a ring of K columns
//
// The posterior is N(w̄, Σ) with Σ = ½ Σ_diag + ½ D Dᵀ / (K - 1), Σ_diag = max(sq_mean - w̄², 0)
// and D the [P,K] deviation matrix. A sample at scale s (s multiplies the covariance):
//
//   w = w̄ + √s · ( √(Σ_diag / 2) ⊙ z1 + D z2 / √(2 (K - 1)) ),   z1 ~ N(0, I_P), z2 ~ N(0, I_K)
//
// With fewer than 2 columns (K = 0: diagonal SWAG) the low-rank part is dropped and the diagonal
// term is √s · √Σ_diag ⊙ z1 (no halving). Scale 0 gives w̄ itself: SWA.
//
// z2 is one K-vector shared by every parameter: the low-rank part couples all the weights.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace seqlab {

inline const char* kSwagFile = "swag.safetensors";

class Swag {
 public:
  Swag() = default;
  // Moments for these named tensors (their shapes), keeping `rank` deviation columns.
  Swag(const std::vector<std::pair<std::string, torch::Tensor>>& params, int64_t rank);

  // Adds a snapshot of the current values of the parameters given at construction (by name).
  void collect(const std::vector<std::pair<std::string, torch::Tensor>>& params);

  int64_t snapshots() const { return n_; }
  int64_t rank() const { return rank_; }
  int64_t columns() const { return std::min(n_, rank_); }  // deviation columns filled
  const std::map<std::string, torch::Tensor>& mean() const { return mean_; }
  // Σ_diag per parameter: max(sq_mean - mean², 0).
  std::map<std::string, torch::Tensor> variance() const;
  // The deviation columns of one parameter: [columns(), ...shape], oldest first.
  torch::Tensor deviations(const std::string& name) const;

  // A weight sample (see the header comment) for every collected parameter; scale 0 = SWA.
  std::map<std::string, torch::Tensor> sample(double scale, torch::Generator& gen) const;

  // As named tensors ("swag.mean.<p>", "swag.sq.<p>", "swag.dev.<p>", "swag.meta" = [n, rank,
  // next column]) for a checkpoint or swag.safetensors, and back (exact).
  std::map<std::string, torch::Tensor> to_tensors() const;
  static Swag from_tensors(const std::map<std::string, torch::Tensor>& t,
                           const std::string& source);

 private:
  int64_t rank_ = 0, n_ = 0, next_ = 0;  // next_: ring slot the next deviation goes to
  std::vector<std::string> names_;
  std::map<std::string, torch::Tensor> mean_, sq_, dev_;  // dev_: [rank, ...shape] ring
};

}  // namespace seqlab
