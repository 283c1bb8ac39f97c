#include "seqlab/model/fixed_point.h"

#include "seqlab/core/error.h"

#include <cmath>
#include <deque>
#include <limits>

namespace seqlab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Records each evaluated iterate's residual, keeps the best, and decides when to stop.
struct Tracker {
  const SolverOptions& o;
  std::vector<int64_t> shape;  // of z0
  SolverResult r;
  double best = kInf;

  // x, fx: [B,N] an iterate and f of it. Returns true when the solver should stop.
  bool record(const torch::Tensor& x, const torch::Tensor& fx) {
    r.iterations += 1;
    const double res = ((fx - x).norm() / (fx.norm() + 1e-9)).item<double>();
    r.residuals.push_back(res);
    if (!std::isfinite(res) || (std::isfinite(best) && res > kDivergence * best)) {
      r.diverged = true;
      return true;
    }
    if (res < best) {
      best = res;
      r.z = x;
      r.residual = res;
      r.best_iteration = r.iterations;
    }
    if (res <= o.tol) {
      r.converged = true;
      return true;
    }
    return r.iterations >= o.max_iter;
  }

  SolverResult finish(const torch::Tensor& z0) {
    if (!r.z.defined()) {  // not one finite residual: hand back the start
      r.z = z0;
      r.residual = kInf;
    } else {
      r.z = r.z.reshape(shape);
    }
    return r;
  }
};

SolverResult naive(const FixedPointMap& f, const torch::Tensor& z0, Tracker& t) {
  auto x = z0;
  const int64_t B = z0.size(0);
  while (true) {
    auto fx = f(x);
    if (t.record(x.reshape({B, -1}), fx.reshape({B, -1}))) break;
    x = fx;
  }
  return t.finish(z0);
}

SolverResult anderson(const FixedPointMap& f, const torch::Tensor& z0, Tracker& t) {
  const auto& o = t.o;
  const int64_t B = z0.size(0), N = z0.numel() / B, m = o.memory;
  auto eval = [&](const torch::Tensor& x) { return f(x.view(t.shape)).reshape({B, N}); };
  auto X = torch::zeros({B, m, N}, z0.options());  // [B,m,N] past iterates (ring buffer)
  auto F = torch::zeros({B, m, N}, z0.options());  // [B,m,N] f of them
  auto x = z0.reshape({B, N});                     // [B,N]
  for (int64_t k = 0;; ++k) {
    auto fx = eval(x);  // [B,N]
    if (t.record(x, fx)) break;
    X.select(1, k % m).copy_(x);
    F.select(1, k % m).copy_(fx);
    const int64_t n = std::min(k + 1, m);
    if (n == 1) {
      x = fx;  // one point: a plain step
      continue;
    }
    auto Xn = X.narrow(1, 0, n), Fn = F.narrow(1, 0, n);  // [B,n,N]
    auto G = (Fn - Xn).to(torch::kDouble);                // [B,n,N] residuals
    // The ridge is relative to the residuals' own scale: an absolute one would swamp the normal
    // equations once the residuals are small and turn the mix into a plain average.
    auto gram = torch::bmm(G, G.transpose(1, 2));                                   // [B,n,n]
    auto ridge = o.lambda * std::get<0>(gram.diagonal(0, 1, 2).max(-1)) + 1e-300;   // [B]
    gram = gram + ridge.view({B, 1, 1}) * torch::eye(n, G.options()).unsqueeze(0);  // [B,n,n]
    auto alpha = torch::linalg_solve(gram, torch::ones({B, n, 1}, G.options()));    // [B,n,1]
    alpha = (alpha / alpha.sum(1, true)).to(z0.scalar_type());                      // [B,n,1]
    auto mixed_f = (alpha * Fn).sum(1);                                             // [B,N]
    x = o.beta == 1.0 ? mixed_f : o.beta * mixed_f + (1.0 - o.beta) * (alpha * Xn).sum(1);
  }
  return t.finish(z0);
}

SolverResult broyden(const FixedPointMap& f, const torch::Tensor& z0, Tracker& t) {
  const auto& o = t.o;
  const int64_t B = z0.size(0), N = z0.numel() / B;
  auto eval = [&](const torch::Tensor& x) { return f(x.view(t.shape)).reshape({B, N}); };
  std::deque<torch::Tensor> us, vs;  // rank-one terms u_i v_i^T of J^-1 + I, each [B,N]
  auto dot = [](const torch::Tensor& a, const torch::Tensor& b) {
    return (a * b).sum(1, true);  // [B,1] per-sample inner product
  };
  // J^-1 y and y^T J^-1, J^-1 = -I + sum_i u_i v_i^T
  auto jinv = [&](const torch::Tensor& y) {
    auto r = -y;
    for (size_t i = 0; i < us.size(); ++i) r = r + us[i] * dot(vs[i], y);
    return r;  // [B,N]
  };
  auto jinv_t = [&](const torch::Tensor& y) {
    auto r = -y;
    for (size_t i = 0; i < us.size(); ++i) r = r + vs[i] * dot(us[i], y);
    return r;  // [B,N]
  };
  auto x = z0.reshape({B, N});  // [B,N]
  auto fx = eval(x);            // [B,N]
  auto gx = fx - x;             // [B,N] g(x) = f(x) - x
  if (!t.record(x, fx)) {
    while (true) {
      auto dx = -jinv(gx);  // [B,N] Newton-like step on g
      auto x_new = x + dx;
      auto fx_new = eval(x_new);
      auto gx_new = fx_new - x_new;
      if (t.record(x_new, fx_new)) break;
      auto dg = gx_new - gx;  // [B,N]
      auto v = jinv_t(dx);    // [B,N] dx^T J^-1
      auto den = dot(v, dg);  // [B,1]
      den = torch::where(den.abs() < 1e-12, torch::full_like(den, 1e-12), den);
      auto u = (dx - jinv(dg)) / den;  // [B,N]
      if (static_cast<int64_t>(us.size()) >= o.memory) {
        // Restart from J^-1 = -I: dropping only the oldest term would leave the later ones
        // correcting an estimate that no longer exists, which diverged in tests.
        us.clear();
        vs.clear();
      }
      us.push_back(u);
      vs.push_back(v);
      x = x_new;
      gx = gx_new;
    }
  }
  return t.finish(z0);
}

}  // namespace

void check_solver_options(const SolverOptions& o) {
  SEQLAB_CHECK(o.method == "anderson" || o.method == "broyden" || o.method == "naive",
               "unknown fixed-point solver '{}' (known: anderson, broyden, naive)", o.method);
  SEQLAB_CHECK(o.max_iter >= 1 && o.max_iter <= 10000,
               "solver threshold must be in [1, 10000], got {}", o.max_iter);
  SEQLAB_CHECK(o.tol > 0 && o.tol < 1, "solver tolerance must be in (0, 1), got {}", o.tol);
  SEQLAB_CHECK(o.memory >= 1 && o.memory <= 100, "solver memory must be in [1, 100], got {}",
               o.memory);
  SEQLAB_CHECK(o.beta > 0 && o.beta <= 1, "Anderson damping beta must be in (0, 1], got {}",
               o.beta);
  SEQLAB_CHECK(o.lambda >= 0, "Anderson ridge lambda must be >= 0, got {}", o.lambda);
}

SolverResult solve_fixed_point(const FixedPointMap& f, const torch::Tensor& z0,
                               const SolverOptions& o) {
  check_solver_options(o);
  SEQLAB_CHECK(z0.dim() >= 1 && z0.numel() > 0 && z0.is_floating_point(),
               "fixed-point solver: z0 must be a non-empty floating-point tensor [B,...]");
  Tracker t{o, z0.sizes().vec(), {}};
  if (o.method == "naive") return naive(f, z0, t);
  if (o.method == "anderson") return anderson(f, z0, t);
  return broyden(f, z0, t);
}

}  // namespace seqlab
