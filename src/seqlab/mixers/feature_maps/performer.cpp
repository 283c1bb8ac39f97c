#include "seqlab/mixers/feature_maps/performer.h"

#include "seqlab/mixers/feature_maps/registry.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace seqlab {

SEQLAB_REGISTER_FEATURE_MAP(
    PerformerImpl,
    {"FAVOR+ positive orthogonal random features of exp(q.k) (Choromanski 2021)", 40, {}});

namespace {
// [H,F,Dh]: per head, ceil(F/Dh) blocks of Dh orthogonal rows, each row scaled to the norm of an
// independent N(0, I_Dh) vector; the first F rows are kept.
torch::Tensor orthogonal_features(int64_t H, int64_t F, int64_t Dh, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  const int64_t blocks = (F + Dh - 1) / Dh;
  auto g = torch::randn({H, blocks, Dh, Dh}, gen, torch::kDouble);  // [H,blocks,Dh,Dh]
  auto [qm, rm] = torch::linalg_qr(g);                              // [H,blocks,Dh,Dh] each
  // LAPACK fixes the signs of R's diagonal, which biases Q; flipping each column of Q by the sign
  // of R's diagonal makes Q Haar-distributed (uniform over orthogonal matrices).
  auto haar = qm * torch::sign(torch::diagonal(rm, 0, -2, -1)).unsqueeze(-2);  // [H,blocks,Dh,Dh]
  auto rows = haar.transpose(-1, -2);                         // [H,blocks,Dh,Dh]: orthonormal rows
  rows = rows.reshape({H, blocks * Dh, Dh}).narrow(1, 0, F);  // [H,F,Dh]
  auto norms = torch::randn({H, F, Dh}, gen, torch::kDouble).norm(2, -1, true);  // [H,F,1]
  return (rows * norms).to(torch::kFloat);                                       // [H,F,Dh]
}
}  // namespace

PerformerImpl::PerformerImpl(const MixerConfig& cfg) : cfg_(cfg) {
  w = register_buffer(
      "w", orthogonal_features(cfg.n_head, feature_dim(cfg), cfg.d_head(), cfg.init_seed));
}

torch::Tensor PerformerImpl::log_features(const torch::Tensor& x, bool is_query) {
  check_feature_input(x, cfg_, kName);
  const double dh = static_cast<double>(cfg_.d_head());
  const double log_f = std::log(static_cast<double>(feature_dim(cfg_)));
  auto xs = x * std::pow(dh, -0.25);                          // [B,H,T,Dh]
  auto wx = per_head_linear(xs, w.to(x.dtype()));             // [B,H,T,F]
  return wx - 0.5 * xs.square().sum(-1, true) - 0.5 * log_f;  // [B,H,T,F]
}

torch::Tensor PerformerImpl::forward(const torch::Tensor& x, bool is_query) {
  return torch::exp(log_features(x, is_query));  // [B,H,T,F]
}

}  // namespace seqlab
