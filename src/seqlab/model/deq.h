// Deep equilibrium block, "Deep Equilibrium Models" (Bai, Kolter and Koltun, NeurIPS 2019).
//
// Instead of n_layer different blocks, one weight-tied cell f is applied until its output stops
// changing; the block's output is the fixed point
//
//   z* = f(z*, x),   f(z, x) = LN2(h + mlp(h)),  h = LN1(u + mixer(u)),  u = z + inj(LN0(x))
//
// with x [B,T,D] the embeddings (input injection: every application sees x again, so z* depends
// on the input however many iterations run), the mixer causal softmax or linear attention, and
// post-norms that keep z bounded (as the DEQ-Transformer does). The solve starts at z = 0 and runs
// without autograd (fixed_point.h: anderson | broyden | naive, lowest-residual iterate returned).
// The output is one more application f(z*, x) with autograd on.
//
// Gradients (--deq-backward):
//   implicit  the implicit function theorem (Bai et al. eq. 6): dL/dz* solves the adjoint fixed
//             point  y = y J_f(z*) + dL/dz,  found with the same solver; vector-Jacobian products
//             y J_f come from autograd through the single application f(z*, x). A custom
//             torch::autograd::Function carries it, so no forward iterate is stored: memory is
//             that of one layer, whatever the depth of the solve.
//   phantom   "phantom gradients" (Geng et al. 2021): k damped steps z <- (1-l) z + l f(z, x)
//             from z* with autograd on, backpropagated as usual; k = 1, l = 1 is the
//             Jacobian-free gradient of Fung et al. (2022).
//   unroll    the weight-tied baseline: exactly --deq-max-iter applications of f from z = 0 with
//             autograd through all of them (memory grows with the depth). No solver.
//
// Jacobian regularisation (--deq-jac-reg g; Bai, Koltun and Kolter 2021, "Stabilizing
// Equilibrium Models by Jacobian Regularization"): with grad on, forward also builds
// g * |J_f(z*)|_F^2 / numel(z*), estimated with one Hutchinson probe e ~ N(0, I) as |e^T J_f|^2 /
// numel (E|e^T J|^2 = |J|_F^2), its vector-Jacobian product kept differentiable; the trainer adds
// it to the loss (take_regularizer). A small Jacobian norm keeps f contractive near z*, which is
// what lets the solver converge in few iterations as training goes on.
//
// The recurrent form: position t's equilibrium depends only on positions <= t (f is causal), so
// step() solves a fixed point for the one new position against the mixer states the earlier
// positions left (each f evaluation runs the mixer's step on a copy of the state), then commits
// the state with z*_t. It agrees with forward() to within the solver tolerance, not bitwise.
//
// Parameter names: deq.ln0, deq.inj (Linear D->D), deq.ln1, deq.mixer.*, deq.ln2, deq.mlp.fc1/fc2.
#pragma once

#include "seqlab/model/fixed_point.h"
#include "seqlab/model/model.h"

namespace seqlab {

// What the last forward and backward solves did (the trainer logs these).
struct DeqStats {
  int64_t forward_iterations = 0;         // evaluations of f (unroll: the depth)
  double forward_residual = 0;            // relative residual of the iterate used
  bool forward_converged = false;         // residual <= --deq-tol
  bool forward_diverged = false;          // the solver stopped on an exploding residual
  std::vector<double> forward_residuals;  // after every evaluation
  int64_t backward_iterations = 0;  // implicit backward: adjoint solver evaluations (0 = none yet)
  double backward_residual = 0;
  bool backward_diverged = false;
  double jacobian = 0;  // the last |J_f(z*)|_F^2 / numel estimate (--deq-jac-reg only)
};

class DeqImpl : public torch::nn::Module {
 public:
  explicit DeqImpl(const ModelConfig& cfg);

  // x [B,T,D] (embeddings) -> the equilibrium, after one more application of f, [B,T,D].
  torch::Tensor forward(const torch::Tensor& x);
  // The cell: z [B,T,D], injected input xi = inj(LN0(x)) [B,T,D] -> [B,T,D].
  torch::Tensor cell(const torch::Tensor& z, const torch::Tensor& xi);
  torch::Tensor inject(const torch::Tensor& x);  // [...,D] -> [...,D]

  std::unique_ptr<MixerState> init_state(int64_t batch) const;
  // x_t [B,D] (embedding of one token) -> its equilibrium [B,D]; advances s.
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s);

  DeqStats stats() const;
  // The weighted Jacobian term of the last forward with grad on, once (then undefined); undefined
  // when --deq-jac-reg is 0 or grad was off.
  torch::Tensor take_regularizer();
  // Replaces the forward solver's threshold and tolerance (a measurement of convergence beyond the
  // trained threshold, exp/cells/mae_deq.cpp); the backward solve keeps its own.
  void set_forward_limits(int64_t max_iter, double tol);

  torch::nn::LayerNorm ln0{nullptr}, ln1{nullptr}, ln2{nullptr};  // [D] each
  torch::nn::Linear inj{nullptr};                                 // weight [D,D], bias [D]
  Mixer mixer;
  Mlp mlp{nullptr};  // null when mlp_ratio == 0 (then f = h, and ln2 is unused)

 private:
  SolverOptions forward_options() const;
  SolverOptions backward_options() const;
  torch::Tensor jacobian_term(const torch::Tensor& f_out, const torch::Tensor& z_in);
  DeqConfig cfg_;
  DeqStats stats_;
  torch::Tensor regularizer_;  // scalar with a graph, see take_regularizer
  torch::Tensor bwd_stats_;    // [3] float64: adjoint iterations, residual, diverged (written by
                               // the custom backward, which may run after forward returns)
};
TORCH_MODULE(Deq);

}  // namespace seqlab
