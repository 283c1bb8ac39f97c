// Fixed-point solvers (model/fixed_point.h): each finds the known fixed point of a contractive map,
// Anderson and Broyden need far fewer evaluations than plain iteration, the lowest-residual iterate
// is returned, divergence is reported, and bad options are errors.
#include "seqlab/model/fixed_point.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace seqlab;

namespace {

// f(z) = tanh(A z + b) per sample, A symmetric [N,N] with spectral radius 0.95: a contraction with
// factor close to 1, so plain iteration is slow. z is [B,N] float64.
struct SlowContraction {
  torch::Tensor A, b;
  explicit SlowContraction(int64_t N, uint64_t seed) {
    torch::manual_seed(seed);
    auto q = std::get<0>(torch::linalg_qr(torch::randn({N, N}, torch::kDouble)));
    // Symmetric, eigenvalues spread over [0, 0.95]. (With A = 0.95 Q, eigenvalues on a circle,
    // no Krylov-type method can beat plain iteration, so that map would test nothing.)
    auto lam = torch::linspace(0.0, 0.95, N, torch::kDouble);
    A = torch::matmul(q * lam, q.t());
    b = 0.1 * torch::randn({N}, torch::kDouble);  // small: tanh stays near its linear range
  }
  torch::Tensor operator()(const torch::Tensor& z) const {
    return torch::tanh(torch::matmul(z, A.t()) + b);
  }
};

SolverOptions opts(const std::string& method, int64_t max_iter, double tol) {
  SolverOptions o;
  o.method = method;
  o.max_iter = max_iter;
  o.tol = tol;
  o.memory = 8;
  return o;
}

}  // namespace

TEST(FixedPoint, EverySolverFindsTheFixedPointAndAcceleratedOnesAreFaster) {
  SlowContraction f(16, 1);
  auto z0 = torch::zeros({3, 16}, torch::kDouble);
  // Reference: plain iteration run far past convergence.
  auto ref = z0;
  for (int i = 0; i < 3000; ++i) ref = f(ref);
  ASSERT_LT((f(ref) - ref).abs().max().item<double>(), 1e-13);

  std::map<std::string, int64_t> iters;
  for (const char* m : {"naive", "anderson", "broyden"}) {
    auto o = opts(m, 2000, 1e-10);
    if (std::string(m) == "broyden") o.memory = 40;  // no restart before it converges
    auto r = solve_fixed_point(f, z0, o);
    EXPECT_TRUE(r.converged) << m << ": residual " << r.residual << " after " << r.iterations;
    EXPECT_FALSE(r.diverged) << m;
    EXPECT_LE(r.residual, 1e-10) << m;
    const double err = (r.z - ref).abs().max().item<double>();
    EXPECT_LT(err, 1e-8) << m << ": max |z - z*| = " << err;
    EXPECT_EQ(static_cast<int64_t>(r.residuals.size()), r.iterations) << m;
    iters[m] = r.iterations;
  }
  // Plain iteration contracts by about 0.95 per step (hundreds of evaluations); both accelerated
  // solvers need well under a third of that.
  EXPECT_LT(iters["anderson"] * 3, iters["naive"])
      << "anderson " << iters["anderson"] << " vs naive " << iters["naive"];
  EXPECT_LT(iters["broyden"] * 3, iters["naive"])
      << "broyden " << iters["broyden"] << " vs naive " << iters["naive"];
}

TEST(FixedPoint, SolvesEachSampleOfTheBatch) {
  // Two samples with different maps' offsets: a per-sample solve gets each one right.
  SlowContraction f(6, 2);
  auto bias = torch::tensor({0.0, 2.0}, torch::kDouble).unsqueeze(1);  // [2,1]
  auto g = [&](const torch::Tensor& z) {
    return torch::tanh(torch::matmul(z, f.A.t()) + f.b + bias);
  };
  for (const char* m : {"anderson", "broyden"}) {
    auto r = solve_fixed_point(g, torch::zeros({2, 6}, torch::kDouble), opts(m, 500, 1e-11));
    ASSERT_TRUE(r.converged) << m;
    EXPECT_LT((g(r.z) - r.z).abs().max().item<double>(), 1e-9) << m;
  }
}

TEST(FixedPoint, ReturnsTheLowestResidualIterate) {
  // A map the solvers cannot finish within 6 evaluations: whatever they do, the iterate handed
  // back is the one with the smallest recorded residual.
  SlowContraction f(16, 3);
  for (const char* m : {"naive", "anderson", "broyden"}) {
    auto r = solve_fixed_point(f, torch::zeros({2, 16}, torch::kDouble), opts(m, 6, 1e-12));
    EXPECT_FALSE(r.converged) << m;
    EXPECT_EQ(r.iterations, 6) << m;
    const double lowest = *std::min_element(r.residuals.begin(), r.residuals.end());
    EXPECT_EQ(r.residual, lowest) << m;
    EXPECT_EQ(r.residuals[r.best_iteration - 1], lowest) << m;
    auto fz = f(r.z);
    const double res = ((fz - r.z).norm() / (fz.norm() + 1e-9)).item<double>();
    EXPECT_NEAR(res, lowest, 1e-12) << m << ": the returned z is not the recorded iterate";
  }
}

TEST(FixedPoint, ReportsDivergence) {
  // z <- z^2 + 1 has no real fixed point; plain iteration overflows to inf within ~10 steps.
  auto f = [](const torch::Tensor& z) { return z * z + 1.0; };
  auto r = solve_fixed_point(f, torch::zeros({1, 4}, torch::kDouble), opts("naive", 100, 1e-6));
  EXPECT_TRUE(r.diverged);
  EXPECT_FALSE(r.converged);
  EXPECT_LT(r.iterations, 100);
  EXPECT_TRUE(torch::isfinite(r.z).all().item<bool>()) << "the returned iterate must be finite";
  EXPECT_TRUE(std::isfinite(r.residual));
}

TEST(FixedPoint, BadOptionsAreErrors) {
  auto f = [](const torch::Tensor& z) { return z * 0.5; };
  auto z0 = torch::ones({1, 2});
  auto bad = [&](SolverOptions o) { EXPECT_THROW(solve_fixed_point(f, z0, o), Error); };
  auto o = opts("anderson", 10, 1e-3);
  bad(opts("newton", 10, 1e-3));
  bad(opts("anderson", 0, 1e-3));
  bad(opts("anderson", 10, 0.0));
  bad(opts("anderson", 10, 1.5));
  o.memory = 0;
  bad(o);
  o = opts("anderson", 10, 1e-3);
  o.beta = 0;
  bad(o);
  EXPECT_THROW(solve_fixed_point(f, torch::ones({1, 2}, torch::kLong), opts("naive", 5, 1e-3)),
               Error);
}
