// Fixed-point solvers for deep equilibrium models (model/deq.h): find z with z = f(z).
//
//   naive     z_{k+1} = f(z_k)                                   (Picard iteration)
//   anderson  Anderson acceleration (Walker & Ni 2011; as in Bai et al. 2019, sec. 3.1.2): the
//             next iterate mixes the last m values f(z_i), with weights alpha minimising
//             |sum_i alpha_i (f(z_i) - z_i)| subject to sum_i alpha_i = 1 (a ridge-regularised
//             m x m solve), damped by beta: z = beta sum alpha f(z) + (1-beta) sum alpha z.
//   broyden   Broyden's "good" method on g(z) = f(z) - z (Bai et al. 2019, eq. 7-8): a low-rank
//             inverse-Jacobian estimate J^-1 ~ -I + sum_i u_i v_i^T, updated by Sherman-Morrison
//             after each step z += -J^-1 g(z); after m rank-one terms it restarts from -I.
//
// Every solver works per sample: z is [B,...], flattened to [B,N], and the mixing weights
// (Anderson) and Jacobian estimates (Broyden) are separate for each of the B rows, as in the
// reference DEQ code, so one sequence of a batch cannot steer another's solve.
//
// Residual: relative, over the whole batch, r(z) = |f(z) - z| / (|f(z)| + 1e-9) (Frobenius).
// The solver stops when r <= tol or after max_iter evaluations of f, and returns the iterate with
// the lowest residual seen (not the last). It reports divergence: a non-finite residual, or one
// above kDivergence times the lowest seen, stops it early with diverged = true (the lowest-residual
// iterate is still returned, and it is finite).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace seqlab {

struct SolverOptions {
  std::string method = "anderson";  // anderson | broyden | naive
  int64_t max_iter = 30;            // evaluations of f at most
  double tol = 1e-3;                // stop at relative residual <= tol
  int64_t memory = 5;               // Anderson: past iterates mixed; Broyden: rank-one terms kept
  double beta = 1.0;                // Anderson damping in (0, 1]
  double lambda = 1e-4;             // Anderson ridge, relative to the largest |residual|^2
};

struct SolverResult {
  torch::Tensor z;                // the lowest-residual iterate, shaped like z0
  double residual = 0;            // its relative residual
  int64_t iterations = 0;         // evaluations of f
  int64_t best_iteration = 0;     // which evaluation gave z (1-based)
  bool converged = false;         // residual <= tol
  bool diverged = false;          // stopped on a non-finite or exploding residual
  std::vector<double> residuals;  // the residual after every evaluation
};

// A residual above kDivergence times the lowest one seen counts as divergence.
inline constexpr double kDivergence = 1e4;

using FixedPointMap = std::function<torch::Tensor(const torch::Tensor&)>;

// Throws seqlab::Error on an unknown method or options out of range (max_iter >= 1, tol > 0,
// memory >= 1, beta in (0,1]).
void check_solver_options(const SolverOptions& o);

// Solves z = f(z) from z0 ([B,...], floating point). f is called with tensors shaped like z0 and
// must return the same shape. Runs under whatever grad mode the caller set (DEQ calls it under
// NoGradGuard).
SolverResult solve_fixed_point(const FixedPointMap& f, const torch::Tensor& z0,
                               const SolverOptions& o);

}  // namespace seqlab
