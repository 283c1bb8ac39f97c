// Deep equilibrium block (model/deq.h): the implicit gradient against autograd through many
// unrolled iterations and against float64 finite differences, phantom gradients, the recurrent
// form against the parallel one, the solvers on the DEQ cell, the model wiring and bad configs.
#include "seqlab/model/deq.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace seqlab;

namespace {

// A tiny DEQ (D = 8, H = 2, MLP 2D), in float64.
ModelConfig tiny(const std::string& arch = "softmax", const std::string& backward = "implicit") {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 8;
  c.mixer.n_head = 2;
  c.mixer.max_len = 32;
  c.mixer.chunk_size = 4;
  c.n_layer = 1;
  c.mlp_ratio = 2;
  c.vocab_size = 11;
  c.deq.enabled = true;
  c.deq.backward = backward;
  c.deq.max_iter = 200;
  c.deq.tol = 1e-11;
  c.deq.bwd_max_iter = 200;
  c.deq.bwd_tol = 1e-11;
  c.validate();
  return c;
}

Deq make_deq(const ModelConfig& c, uint64_t seed) {
  torch::manual_seed(seed);
  Deq d(c);
  d->to(torch::kDouble);
  return d;
}

void copy_params(torch::nn::Module& to, torch::nn::Module& from) {
  torch::NoGradGuard ng;
  auto src = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(src[p.key()]);
}

// Every parameter's gradient and x's, flattened into one vector.
torch::Tensor all_grads(torch::nn::Module& m, const torch::Tensor& x) {
  std::vector<torch::Tensor> g;
  for (auto& p : m.parameters())
    g.push_back(p.grad().defined() ? p.grad().flatten() : torch::zeros({p.numel()}, p.options()));
  g.push_back(x.grad().flatten());
  return torch::cat(g);
}

double cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return (torch::dot(a, b) / (a.norm() * b.norm())).item<double>();
}

// loss = sum(w * deq(x)) for a fixed random w; returns the gradients of the parameters and x.
torch::Tensor gradients(Deq& d, const torch::Tensor& x0, const torch::Tensor& w) {
  d->zero_grad();
  auto x = x0.clone().requires_grad_(true);
  (d->forward(x) * w).sum().backward();
  return all_grads(*d, x);
}

}  // namespace

TEST(Deq, ImplicitGradientEqualsAutogradThroughManyUnrolledIterations) {
  for (const char* solver : {"anderson", "broyden"}) {
    auto c = tiny();
    c.deq.solver = solver;
    auto deq = make_deq(c, 1);
    auto cu = tiny("softmax", "unroll");
    cu.deq.max_iter = 150;  // plain iteration from 0, far past convergence
    auto unrolled = make_deq(cu, 1);
    copy_params(*unrolled, *deq);
    torch::manual_seed(7);
    auto x = torch::randn({2, 6, 8}, torch::kDouble);
    auto w = torch::randn({2, 6, 8}, torch::kDouble);
    auto g_implicit = gradients(deq, x, w);
    auto s = deq->stats();
    ASSERT_TRUE(s.forward_converged) << solver << ": forward residual " << s.forward_residual;
    ASSERT_GT(s.backward_iterations, 0) << "the custom backward did not run";
    EXPECT_LT(s.backward_residual, 1e-9) << solver;
    auto g_unrolled = gradients(unrolled, x, w);
    ASSERT_LT(unrolled->stats().forward_residual, 1e-10)
        << "the unrolled reference did not converge";
    const double cos = cosine(g_implicit, g_unrolled);
    const double rel = ((g_implicit - g_unrolled).norm() / g_unrolled.norm()).item<double>();
    EXPECT_GE(cos, 0.999) << solver;
    EXPECT_LT(rel, 1e-5) << solver << ": cosine " << cos;
  }
}

TEST(Deq, ImplicitGradientMatchesFiniteDifferences) {
  // Softmax attention: linear attention computes in fp32 whatever the parameters' dtype, which
  // finite differences at eps 1e-5 cannot resolve.
  auto c = tiny("softmax");
  auto deq = make_deq(c, 2);
  torch::manual_seed(8);
  auto x = torch::randn({1, 5, 8}, torch::kDouble);
  auto w = torch::randn({1, 5, 8}, torch::kDouble);
  gradients(deq, x, w);
  // The loss is evaluated by plain iteration run to machine precision on a twin with the same
  // weights: an accelerated solver stopped at a tolerance returns its best iterate, which moves
  // discontinuously under a 1e-5 perturbation (another iterate wins), and central differences
  // divide that jump by 2e-5.
  auto cf = tiny("softmax");
  cf.deq.solver = "naive";
  cf.deq.max_iter = 5000;
  cf.deq.tol = 1e-15;
  auto exact = make_deq(cf, 2);
  auto loss = [&]() {
    torch::NoGradGuard ng;
    copy_params(*exact, *deq);
    auto out = exact->forward(x);
    EXPECT_LT(exact->stats().forward_residual, 1e-13);
    return (out * w).sum().item<double>();
  };
  const double eps = 1e-5;
  int checked = 0;
  for (auto& p : deq->named_parameters()) {
    auto flat = p.value().view({-1});
    auto grad = p.value().grad().view({-1});
    for (int64_t i : {int64_t{0}, flat.numel() / 2, flat.numel() - 1}) {
      const double orig = flat[i].item<double>();
      {
        torch::NoGradGuard ng;
        flat[i] = orig + eps;
      }
      const double up = loss();
      {
        torch::NoGradGuard ng;
        flat[i] = orig - eps;
      }
      const double down = loss();
      {
        torch::NoGradGuard ng;
        flat[i] = orig;
      }
      const double fd = (up - down) / (2 * eps), an = grad[i].item<double>();
      EXPECT_NEAR(an, fd, 1e-6 + 1e-4 * std::abs(fd)) << p.key() << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

TEST(Deq, PhantomGradientApproachesTheImplicitOne) {
  auto c = tiny();
  auto deq = make_deq(c, 3);
  torch::manual_seed(9);
  auto x = torch::randn({2, 5, 8}, torch::kDouble);
  auto w = torch::randn({2, 5, 8}, torch::kDouble);
  auto g_implicit = gradients(deq, x, w);
  auto cp = tiny("softmax", "phantom");
  cp.deq.phantom_k = 60;
  cp.deq.phantom_damping = 1.0;
  auto phantom = make_deq(cp, 3);
  copy_params(*phantom, *deq);
  EXPECT_GE(cosine(gradients(phantom, x, w), g_implicit), 0.999);
  // Jacobian-free (k = 1, damping 1): a cheaper, different direction, still a descent one here.
  cp.deq.phantom_k = 1;
  auto jfree = make_deq(cp, 3);
  copy_params(*jfree, *deq);
  const double cos1 = cosine(gradients(jfree, x, w), g_implicit);
  EXPECT_LT(cos1, 0.99999) << "k = 1 should not be the exact gradient";
  EXPECT_GT(cos1, 0.0);
}

TEST(Deq, AcceleratedSolversBeatPlainIterationOnTheCell) {
  torch::NoGradGuard ng;
  std::map<std::string, int64_t> iters;
  for (const char* solver : {"naive", "anderson", "broyden"}) {
    auto c = tiny();
    c.deq.solver = solver;
    c.deq.tol = 1e-8;
    auto deq = make_deq(c, 4);
    torch::manual_seed(10);
    deq->forward(torch::randn({2, 8, 8}, torch::kDouble));
    auto s = deq->stats();
    EXPECT_TRUE(s.forward_converged) << solver << ": residual " << s.forward_residual;
    iters[solver] = s.forward_iterations;
  }
  EXPECT_LT(iters["anderson"], iters["naive"]) << iters["anderson"] << " vs " << iters["naive"];
  EXPECT_LT(iters["broyden"], iters["naive"]) << iters["broyden"] << " vs " << iters["naive"];
}

TEST(Deq, ModelStepMatchesForward) {
  for (const char* backward : {"implicit", "unroll"}) {
    // fp32, as models run (the attention states are fp32): the equilibrium forms agree to
    // within what the solver's tolerance leaves; the unrolled stack exactly.
    const bool unroll = std::string(backward) == "unroll";
    auto c = tiny("softmax", backward);
    c.deq.max_iter = unroll ? 6 : 100;
    c.deq.tol = 1e-6;
    torch::manual_seed(5);
    SeqModel m(c);
    torch::NoGradGuard ng;
    auto tokens = torch::randint(0, 11, {2, 7}, torch::kLong);
    auto par = m->forward(tokens);  // [2,7,11]
    auto s = m->init_state(2);
    for (int64_t t = 0; t < 7; ++t) {
      auto y = m->step(tokens.select(1, t), s);
      const double diff = (y - par.select(1, t)).abs().max().item<double>();
      EXPECT_LT(diff, unroll ? 1e-5 : 1e-4) << backward << " position " << t;
    }
  }
}

TEST(Deq, ModelHasOneWeightTiedBlock) {
  auto c = tiny();
  SeqModel m(c);
  EXPECT_EQ(m->blocks->size(), 0u);
  auto p = m->named_parameters();
  for (const char* n : {"deq.inj.weight", "deq.ln0.weight", "deq.ln1.bias", "deq.mixer.q.weight",
                        "deq.mlp.fc1.weight", "deq.ln2.weight", "wte.weight", "ln_f.weight"})
    EXPECT_TRUE(p.contains(n)) << n;
  auto logits = m->forward(torch::zeros({2, 5}, torch::kLong));
  EXPECT_EQ(logits.sizes(), torch::IntArrayRef({2, 5, 11}));
}

TEST(Deq, BadConfigsAreErrors) {
  auto bad = [](const std::function<void(ModelConfig&)>& edit) {
    auto c = tiny();
    edit(c);
    EXPECT_THROW(c.validate(), Error);
  };
  bad([](ModelConfig& c) { c.deq.solver = "newton"; });
  bad([](ModelConfig& c) { c.deq.backward = "adjoint"; });
  bad([](ModelConfig& c) { c.deq.max_iter = 0; });
  bad([](ModelConfig& c) { c.deq.tol = 0; });
  bad([](ModelConfig& c) { c.deq.bwd_tol = -1; });
  bad([](ModelConfig& c) { c.deq.phantom_damping = 0; });
  bad([](ModelConfig& c) { c.deq.beta = 2; });
  bad([](ModelConfig& c) { c.n_layer = 2; });
  bad([](ModelConfig& c) { c.mixer.arch = "gru"; });
  bad([](ModelConfig& c) { c.deq.jac_reg = -0.5; });
  bad([](ModelConfig& c) { c.deq.jac_reg = std::nan(""); });
  bad([](ModelConfig& c) {
    c.deq.backward = "unroll";
    c.deq.max_iter = 4;
    c.deq.jac_reg = 1;
  });
}

// |J_f(z*)|_F^2 / N, exactly: the rows e_i^T J of the cell's Jacobian at the equilibrium, one
// vector-Jacobian product per basis vector.
double exact_jacobian_norm(Deq& d, const torch::Tensor& x) {
  torch::Tensor z_star;
  {
    torch::NoGradGuard ng;
    z_star = d->forward(x);  // f(z*) = z* to 1e-11
  }
  auto xi = d->inject(x).detach();
  auto z = z_star.clone().requires_grad_(true);
  auto f = d->cell(z, xi);
  double sum = 0;
  const int64_t n = f.numel();
  for (int64_t i = 0; i < n; ++i) {
    auto e = torch::zeros_like(f).flatten();
    e[i] = 1.0;
    auto row = torch::autograd::grad({f}, {z}, {e.view_as(f)}, /*retain_graph=*/true)[0];
    sum += row.pow(2).sum().item<double>();
  }
  return sum / static_cast<double>(n);
}

// The Jacobian regulariser (Bai, Koltun and Kolter 2021) is an unbiased estimate of |J|_F^2 / N:
// its mean over many probes lands on the exact value; it is weighted, taken once, absent with
// grad off, and its gradient reaches the cell's parameters.
TEST(Deq, JacobianRegulariserEstimatesTheFrobeniusNorm) {
  for (const std::string backward : {"implicit", "phantom"}) {
    auto c = tiny("softmax", backward);
    c.deq.jac_reg = 2.0;
    c.deq.tol = 1e-9;
    auto d = make_deq(c, 3);
    torch::manual_seed(4);
    auto x = torch::randn({1, 3, 8}, torch::kDouble);
    const double exact = exact_jacobian_norm(d, x);
    ASSERT_GT(exact, 0);
    double sum = 0;
    const int probes = 400;
    for (int i = 0; i < probes; ++i) {
      d->forward(x);
      auto reg = d->take_regularizer();
      ASSERT_TRUE(reg.defined()) << backward;
      EXPECT_FALSE(d->take_regularizer().defined()) << "taken once";
      EXPECT_NEAR(reg.item<double>(), 2.0 * d->stats().jacobian, 1e-12);
      sum += d->stats().jacobian;
    }
    // The one-probe estimate's relative sd is at most sqrt(2): the mean of 400 is within ~7%.
    EXPECT_NEAR(sum / probes, exact, 0.25 * exact) << backward;
    {
      torch::NoGradGuard ng;
      d->forward(x);
      EXPECT_FALSE(d->take_regularizer().defined()) << "no term with grad off";
    }
    d->zero_grad();
    d->forward(x);
    d->take_regularizer().backward();
    double g = 0;
    for (auto& p : d->mixer->parameters())
      if (p.grad().defined()) g += p.grad().abs().sum().item<double>();
    EXPECT_GT(g, 0) << backward << ": the term's gradient reaches the mixer";
  }
}

// set_forward_limits changes the forward solve only: a threshold of 3 stops after 3 evaluations.
TEST(Deq, ForwardLimitsCanBeChanged) {
  auto d = make_deq(tiny(), 5);
  torch::NoGradGuard ng;
  auto x = torch::randn({1, 4, 8}, torch::kDouble);
  d->set_forward_limits(3, 1e-12);
  d->forward(x);
  EXPECT_EQ(d->stats().forward_iterations, 3);
  EXPECT_EQ(d->stats().forward_residuals.size(), 3u);
  EXPECT_THROW(d->set_forward_limits(0, 1e-3), Error);
}
