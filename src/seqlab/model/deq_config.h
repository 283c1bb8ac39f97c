// DeqConfig: the deep-equilibrium options of a model (model/deq.h), one typed field list that is
// part of ModelConfig (its flags are --deq, --deq-solver, ...; JSON keys deq, deq_solver, ...).
#pragma once

#include "seqlab/core/fields.h"

#include <cstdint>
#include <string>

namespace seqlab {

struct DeqConfig {
  bool enabled = false;        // replace the block stack by one weight-tied equilibrium block
  std::string solver;          // forward solver: anderson | broyden | naive
  int64_t max_iter = 0;        // forward threshold; for backward = unroll, the exact depth
  double tol = 0;              // forward: stop at relative residual |f(z)-z| / |f(z)| <= tol
  std::string backward;        // implicit | phantom | unroll
  int64_t bwd_max_iter = 0;    // implicit backward: adjoint solver threshold
  double bwd_tol = 0;          // implicit backward: adjoint relative residual tolerance
  int64_t memory = 0;          // Anderson: past iterates mixed; Broyden: rank-one updates kept
  double beta = 0;             // Anderson damping (1 = undamped)
  int64_t phantom_k = 0;       // phantom gradient: damped unrolled steps from z*
  double phantom_damping = 0;  // phantom gradient: lambda in z <- (1-lambda) z + lambda f(z)
  double jac_reg = 0;          // Jacobian regularisation weight (0 = off)

  template <class V>
  void visit(V&& v) {
    v(enabled, "deq", false,
      "deep equilibrium model (Bai et al. 2019): one weight-tied, input-injected block solved to "
      "its fixed point; needs --n-layer 1");
    v(solver, "deq-solver", std::string("anderson"),
      "DEQ fixed-point solver: anderson|broyden|naive");
    v(max_iter, "deq-max-iter", int64_t{30},
      "DEQ forward solver threshold (with --deq-backward unroll: the exact number of iterations)");
    v(tol, "deq-tol", 1e-3, "DEQ forward tolerance on the relative residual |f(z)-z|/|f(z)|");
    v(backward, "deq-backward", std::string("implicit"),
      "DEQ gradient: implicit (adjoint fixed point) | phantom (k damped steps from z*) | unroll "
      "(backprop through --deq-max-iter plain iterations: the weight-tied baseline)");
    v(bwd_max_iter, "deq-bwd-max-iter", int64_t{30}, "DEQ adjoint solver threshold");
    v(bwd_tol, "deq-bwd-tol", 1e-4, "DEQ adjoint tolerance on the relative residual");
    v(memory, "deq-memory", int64_t{5}, "Anderson history / Broyden rank-one updates kept");
    v(beta, "deq-beta", 1.0, "Anderson damping beta in (0,1]");
    v(phantom_k, "deq-phantom-k", int64_t{5},
      "phantom gradient steps (1 with damping 1 = Jacobian-free)");
    v(phantom_damping, "deq-phantom-damping", 0.5, "phantom gradient damping lambda in (0,1]");
    v(jac_reg, "deq-jac-reg", 0.0,
      "Jacobian regularisation (Bai, Koltun and Kolter 2021): adds this weight times "
      "|J_f(z*)|_F^2 / numel(z), a one-probe Hutchinson estimate, to the training loss, which "
      "keeps "
      "the equilibrium well conditioned so the solver converges in fewer iterations; 0 = off; "
      "needs --deq-backward implicit or phantom");
  }

  DeqConfig() { visit(DefaultsVisitor{}); }
  // Throws seqlab::Error on an unknown solver or gradient, or a threshold/tolerance out of range.
  void validate() const;
};

}  // namespace seqlab
