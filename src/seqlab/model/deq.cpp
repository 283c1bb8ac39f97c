#include "seqlab/model/deq.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/scan_common.h"

#include <cmath>
#include <optional>

namespace seqlab {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The implicit backward (Bai et al. 2019, eq. 6) as an autograd node. Forward is the identity on
// f_out = f(z_in, x), where z_in is z* detached (a leaf). Backward receives dL/dz and returns the
// solution y of the adjoint fixed point y = y J_f(z*) + dL/dz, found with the forward solver's
// method; autograd then carries y through f_out's graph to the parameters and x. The
// vector-Jacobian products y J_f run through that same one-application graph (retained), so nothing
// of the forward solve is kept.
struct ImplicitBackward : torch::autograd::Function<ImplicitBackward> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& f_out,
                               const torch::Tensor& z_in, const torch::Tensor& stats,
                               const std::string& method, int64_t max_iter, double tol,
                               int64_t memory, double beta) {
    ctx->save_for_backward({f_out, z_in});
    ctx->saved_data["stats"] = stats;
    ctx->saved_data["method"] = method;
    ctx->saved_data["max_iter"] = max_iter;
    ctx->saved_data["tol"] = tol;
    ctx->saved_data["memory"] = memory;
    ctx->saved_data["beta"] = beta;
    return f_out.clone();
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto f_out = saved[0], z_in = saved[1];
    auto g = grad_out[0].contiguous();  // [B,T,D] dL/dz
    SolverOptions o;
    o.method = ctx->saved_data["method"].toStringRef();
    o.max_iter = ctx->saved_data["max_iter"].toInt();
    o.tol = ctx->saved_data["tol"].toDouble();
    o.memory = ctx->saved_data["memory"].toInt();
    o.beta = ctx->saved_data["beta"].toDouble();
    auto vjp = [&](const torch::Tensor& y) {
      return torch::autograd::grad({f_out}, {z_in}, {y}, /*retain_graph=*/true)[0];  // y J_f
    };
    auto r = solve_fixed_point([&](const torch::Tensor& y) { return vjp(y) + g; },
                               torch::zeros_like(g), o);
    auto stats = ctx->saved_data["stats"].toTensor();
    stats[0] = static_cast<double>(r.iterations);
    stats[1] = r.residual;
    stats[2] = r.diverged ? 1.0 : 0.0;
    return {r.z,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

// The recurrent state: one mixer state for the equilibrium modes; one per iteration for the
// unrolled weight-tied model, which is a stack of max_iter layers sharing their weights.
struct DeqState : MixerState {
  std::vector<std::unique_ptr<MixerState>> layers;
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    for (size_t i = 0; i < layers.size(); ++i)
      layers[i]->for_each(
          [&](const std::string& n, torch::Tensor& t) { f(std::to_string(i) + "." + n, t); });
  }
  std::unique_ptr<MixerState> clone() const override {
    auto c = std::make_unique<DeqState>();
    for (const auto& l : layers) c->layers.push_back(l->clone());
    return c;
  }
};

}  // namespace

void DeqConfig::validate() const {
  SolverOptions o;
  o.method = solver;
  o.max_iter = max_iter;
  o.tol = tol;
  o.memory = memory;
  o.beta = beta;
  try {
    check_solver_options(o);
  } catch (const Error& e) {
    fail("--deq: {}", e.what());
  }
  SEQLAB_CHECK(backward == "implicit" || backward == "phantom" || backward == "unroll",
               "--deq-backward must be implicit, phantom or unroll, got '{}'", backward);
  SEQLAB_CHECK(bwd_max_iter >= 1 && bwd_max_iter <= 10000,
               "--deq-bwd-max-iter must be in [1, 10000], got {}", bwd_max_iter);
  SEQLAB_CHECK(bwd_tol > 0 && bwd_tol < 1, "--deq-bwd-tol must be in (0, 1), got {}", bwd_tol);
  SEQLAB_CHECK(phantom_k >= 1 && phantom_k <= 1000, "--deq-phantom-k must be in [1, 1000], got {}",
               phantom_k);
  SEQLAB_CHECK(phantom_damping > 0 && phantom_damping <= 1,
               "--deq-phantom-damping must be in (0, 1], got {}", phantom_damping);
  SEQLAB_CHECK(std::isfinite(jac_reg) && jac_reg >= 0 && jac_reg <= 1000,
               "--deq-jac-reg must be in [0, 1000], got {}", jac_reg);
  SEQLAB_CHECK(jac_reg == 0 || backward != "unroll",
               "--deq-jac-reg needs an equilibrium (--deq-backward implicit or phantom), not "
               "unroll");
}

DeqImpl::DeqImpl(const ModelConfig& cfg) : cfg_(cfg.deq) {
  cfg_.validate();
  const int64_t D = cfg.mixer.d_model;
  auto ln = [&](const char* name) {
    return register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  };
  ln0 = ln("ln0");
  inj = register_module("inj", torch::nn::Linear(D, D));
  ln1 = ln("ln1");
  mixer = register_module("mixer", make_mixer(cfg.mixer));
  if (cfg.mlp_ratio > 0) {
    ln2 = ln("ln2");
    mlp = register_module("mlp", Mlp(D, cfg.mlp_ratio * D, cfg.activation));
  }
  bwd_stats_ = torch::zeros({3}, torch::kDouble);
}

SolverOptions DeqImpl::forward_options() const {
  SolverOptions o;
  o.method = cfg_.solver;
  o.max_iter = cfg_.max_iter;
  o.tol = cfg_.tol;
  o.memory = cfg_.memory;
  o.beta = cfg_.beta;
  return o;
}

SolverOptions DeqImpl::backward_options() const {
  auto o = forward_options();
  o.max_iter = cfg_.bwd_max_iter;
  o.tol = cfg_.bwd_tol;
  return o;
}

torch::Tensor DeqImpl::inject(const torch::Tensor& x) {
  return inj(ln0(x));  // [...,D]
}

torch::Tensor DeqImpl::cell(const torch::Tensor& z, const torch::Tensor& xi) {
  auto u = z + xi;                      // [B,T,D] input injection
  auto h = ln1(u + mixer->forward(u));  // [B,T,D]
  return mlp ? ln2(h + mlp(h)) : h;     // [B,T,D]
}

torch::Tensor DeqImpl::forward(const torch::Tensor& x) {
  SEQLAB_CHECK(x.dim() == 3, "DEQ: expected x [B,T,D], got {} dims", x.dim());
  auto xi = inject(x);  // [B,T,D]
  if (cfg_.backward == "unroll") {
    // The weight-tied baseline: a plain stack of max_iter applications, backpropagated through.
    auto z = torch::zeros_like(xi);  // [B,T,D]
    stats_ = {};
    for (int64_t i = 0; i < cfg_.max_iter; ++i) {
      auto next = cell(z, xi);  // [B,T,D]
      torch::NoGradGuard ng;
      stats_.forward_residuals.push_back(((next - z).norm() / (next.norm() + 1e-9)).item<double>());
      z = next;
    }
    stats_.forward_iterations = cfg_.max_iter;
    stats_.forward_residual = stats_.forward_residuals.back();
    stats_.forward_converged = stats_.forward_residual <= cfg_.tol;
    return z;
  }
  SolverResult r;
  {
    torch::NoGradGuard ng;
    auto xi_c = xi.detach();
    r = solve_fixed_point([&](const torch::Tensor& z) { return cell(z, xi_c); },
                          torch::zeros_like(xi_c), forward_options());
  }
  stats_.forward_iterations = r.iterations;
  stats_.forward_residual = r.residual;
  stats_.forward_converged = r.converged;
  stats_.forward_diverged = r.diverged;
  stats_.forward_residuals = r.residuals;
  auto z_star = r.z.detach();  // [B,T,D]
  regularizer_ = torch::Tensor();
  if (!torch::GradMode::is_enabled()) return cell(z_star, xi);
  if (cfg_.backward == "phantom") {
    if (cfg_.jac_reg > 0) {  // one more application, at a leaf, for the Jacobian
      auto z_leaf = z_star.clone().requires_grad_(true);
      jacobian_term(cell(z_leaf, xi), z_leaf);
    }
    auto z = z_star;
    const double l = cfg_.phantom_damping;
    for (int64_t i = 0; i < cfg_.phantom_k; ++i)
      z = l == 1.0 ? cell(z, xi) : (1.0 - l) * z + l * cell(z, xi);  // [B,T,D]
    return z;
  }
  auto z_in = z_star.clone().requires_grad_(true);  // [B,T,D] leaf: the adjoint's variable
  // The Jacobian term differentiates f twice: a recurrent mixer must build it from its per-token
  // reference, since the fused scans have no double backward (mixers/scan_common.h).
  std::optional<ReferenceScans> twice;
  if (cfg_.jac_reg > 0) twice.emplace();
  auto f_out = cell(z_in, xi);  // [B,T,D]
  if (cfg_.jac_reg > 0) jacobian_term(f_out, z_in);
  const auto o = backward_options();
  return ImplicitBackward::apply(f_out, z_in, bwd_stats_, o.method, o.max_iter, o.tol, o.memory,
                                 o.beta);
}

// |e^T J_f|^2 / numel for one probe e ~ N(0, I), differentiable (create_graph), weighted into
// regularizer_; f_out = f(z_in, x) with z_in a leaf at z*.
torch::Tensor DeqImpl::jacobian_term(const torch::Tensor& f_out, const torch::Tensor& z_in) {
  auto e = torch::randn_like(f_out);  // [B,T,D]
  auto ej = torch::autograd::grad({f_out}, {z_in}, {e}, /*retain_graph=*/true,
                                  /*create_graph=*/true)[0];  // [B,T,D] e^T J_f
  auto term = ej.pow(2).sum() / static_cast<double>(e.numel());
  stats_.jacobian = term.item<double>();
  regularizer_ = cfg_.jac_reg * term;
  return term;
}

torch::Tensor DeqImpl::take_regularizer() {
  auto r = regularizer_;
  regularizer_ = torch::Tensor();
  return r;
}

void DeqImpl::set_forward_limits(int64_t max_iter, double tol) {
  SEQLAB_CHECK(max_iter >= 1 && tol > 0, "DEQ: bad solver limits {} / {}", max_iter, tol);
  cfg_.max_iter = max_iter;
  cfg_.tol = tol;
}

std::unique_ptr<MixerState> DeqImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<DeqState>();
  const int64_t n = cfg_.backward == "unroll" ? cfg_.max_iter : 1;
  for (int64_t i = 0; i < n; ++i) s->layers.push_back(mixer->init_state(batch));
  return s;
}

torch::Tensor DeqImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<DeqState>(st, "deq");
  SEQLAB_CHECK(x_t.dim() == 2, "DEQ: expected x_t [B,D], got {} dims", x_t.dim());
  auto xi = inject(x_t);  // [B,D]
  // One application of f at one position, against (and advancing) a mixer state.
  auto cell_step = [&](const torch::Tensor& z, MixerState& ms) {
    auto u = z + xi;                       // [B,D]
    auto h = ln1(u + mixer->step(u, ms));  // [B,D]
    return mlp ? ln2(h + mlp(h)) : h;      // [B,D]
  };
  if (cfg_.backward == "unroll") {
    auto z = torch::zeros_like(xi);  // [B,D]
    for (auto& l : s.layers) z = cell_step(z, *l);
    return z;
  }
  auto& ms = *s.layers.front();
  torch::Tensor z_star;
  {
    torch::NoGradGuard ng;
    auto r = solve_fixed_point(
        [&](const torch::Tensor& z) {
          auto trial = ms.clone();  // each evaluation sees the state before this token
          return cell_step(z, *trial);
        },
        torch::zeros_like(xi), forward_options());
    z_star = r.z;
  }
  return cell_step(z_star, ms);  // [B,D], commits this token to the state
}

DeqStats DeqImpl::stats() const {
  DeqStats s = stats_;
  auto b = bwd_stats_.accessor<double, 1>();
  s.backward_iterations = static_cast<int64_t>(b[0]);
  s.backward_residual = b[1];
  s.backward_diverged = b[2] != 0.0;
  return s;
}

}  // namespace seqlab
