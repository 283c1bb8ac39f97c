// The fused selective scan (mixers/selective_scan.cpp) against the per-step tensor reference:
// values and all five gradients, across chunk boundaries, with and without autograd, on views, and
// independent of the thread count.
#include "seqlab/mixers/selective_scan.h"

#include "mixer_testing.h"

#include <ATen/Parallel.h>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

struct Inputs {
  torch::Tensor u, delta, A, B, C;  // [Bn,T,E], [Bn,T,E], [E,N], [Bn,T,N], [Bn,T,N]
};

// A spread beyond Mamba's init so that every (e, n) decays at its own rate; delta from softplus as
// in Mamba, scaled up so that Abar spans (0, 1) and the state both remembers and forgets.
Inputs make_inputs(int64_t Bn, int64_t T, int64_t E, int64_t N, torch::Dtype type, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(type);
  Inputs in;
  in.u = torch::randn({Bn, T, E}, o);
  in.delta = torch::softplus(torch::randn({Bn, T, E}, o) - 1.0);
  in.A = -torch::exp(torch::log(torch::arange(1, N + 1, o)).repeat({E, 1}) +
                     0.5 * torch::randn({E, N}, o));
  in.B = torch::randn({Bn, T, N}, o);
  in.C = torch::randn({Bn, T, N}, o);
  return in;
}

std::vector<torch::Tensor> leaves(const Inputs& in) {
  return {in.u.clone().requires_grad_(), in.delta.clone().requires_grad_(),
          in.A.clone().requires_grad_(), in.B.clone().requires_grad_(),
          in.C.clone().requires_grad_()};
}

// y and the gradients of sum(y * w) with respect to u, delta, A, B and C.
template <typename Scan>
std::vector<torch::Tensor> value_and_grads(Scan scan, const Inputs& in, const torch::Tensor& w) {
  auto x = leaves(in);
  auto y = scan(x[0], x[1], x[2], x[3], x[4]);
  (y * w).sum().backward();
  return {y.detach(), x[0].grad(), x[1].grad(), x[2].grad(), x[3].grad(), x[4].grad()};
}

void expect_matches_reference(int64_t Bn, int64_t T, int64_t E, int64_t N, torch::Dtype type,
                              double tol) {
  const auto in = make_inputs(Bn, T, E, N, type, 11);
  const auto w = torch::randn({Bn, T, E}, torch::TensorOptions().dtype(type));
  const auto fused = value_and_grads(selective_scan, in, w);
  const auto ref = value_and_grads(selective_scan_reference, in, w);
  const char* names[] = {"y", "grad u", "grad delta", "grad A", "grad B", "grad C"};
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_TRUE(rel_close(fused[i], ref[i], tol, names[i]))
        << "B " << Bn << " T " << T << " E " << E << " N " << N;
}

}  // namespace

TEST(SelectiveScan, MatchesReferenceInDouble) {
  expect_matches_reference(2, 7, 5, 3, torch::kDouble, 1e-12);
  expect_matches_reference(3, 1, 4, 16, torch::kDouble, 1e-12);
  // Checkpoints every 16 tokens: T = 7 and 1 fit in one segment, T = 600 runs 38, the last short.
  expect_matches_reference(4, 600, 64, 16, torch::kDouble, 1e-11);
}

TEST(SelectiveScan, MatchesReferenceInFloat) {
  // Where the CPU has AVX2 + FMA, N = 16 takes the AVX2 loops and N = 12 the one-lane portable
  // ones; forced portable, N = 16 takes the 8-lane portable loops.
  expect_matches_reference(3, 80, 32, 16, torch::kFloat, 2e-5);
  expect_matches_reference(3, 80, 32, 12, torch::kFloat, 2e-5);
  seqlab::detail::force_portable_selective_scan(true);
  expect_matches_reference(3, 80, 32, 16, torch::kFloat, 2e-5);
  expect_matches_reference(2, 700, 64, 16, torch::kFloat, 2e-5);  // 44 segments, the last short
  seqlab::detail::force_portable_selective_scan(false);
}

TEST(SelectiveScan, NoGradPathMatchesAutogradPath) {
  const auto in = make_inputs(2, 300, 64, 16, torch::kFloat, 5);
  torch::Tensor with_graph, without;
  {
    auto x = leaves(in);
    with_graph = selective_scan(x[0], x[1], x[2], x[3], x[4]).detach();
  }
  {
    torch::NoGradGuard ng;
    without = selective_scan(in.u, in.delta, in.A, in.B, in.C);
  }
  EXPECT_TRUE(torch::equal(with_graph, without));
}

TEST(SelectiveScan, AcceptsViews) {
  // u and delta as transposes of [Bn,E,T] tensors, B as a slice: the scan copies them contiguous.
  const auto in = make_inputs(2, 9, 6, 4, torch::kDouble, 7);
  const auto ut = in.u.transpose(1, 2).contiguous().transpose(1, 2);
  const auto dt = in.delta.transpose(1, 2).contiguous().transpose(1, 2);
  const auto Bw = torch::cat({in.B, in.B}, -1).narrow(-1, 0, 4);
  ASSERT_FALSE(ut.is_contiguous());
  ASSERT_FALSE(Bw.is_contiguous());
  EXPECT_TRUE(all_close(selective_scan(ut, dt, in.A, Bw, in.C),
                        selective_scan_reference(in.u, in.delta, in.A, in.B, in.C), 1e-12,
                        "views"));
}

TEST(SelectiveScan, SameResultOnOneThreadAndTwo) {
  const auto in = make_inputs(4, 50, 32, 8, torch::kFloat, 9);
  const auto w = torch::randn({4, 50, 32});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = value_and_grads(selective_scan, in, w);
  at::set_num_threads(2);
  const auto two = value_and_grads(selective_scan, in, w);
  at::set_num_threads(threads);
  // Rows are independent: everything but grad A (a sum over rows) is bitwise the same.
  for (size_t i = 0; i < one.size(); ++i)
    if (i == 3)
      EXPECT_TRUE(rel_close(two[i], one[i], 1e-6, "grad A"));
    else
      EXPECT_TRUE(torch::equal(one[i], two[i])) << "output " << i;
}

TEST(SelectiveScan, RejectsBadShapes) {
  const auto in = make_inputs(2, 5, 4, 3, torch::kFloat, 1);
  EXPECT_THROW(selective_scan(in.u, in.delta.narrow(1, 0, 4), in.A, in.B, in.C), std::exception);
  EXPECT_THROW(selective_scan(in.u, in.delta, in.A.t(), in.B, in.C), std::exception);
  EXPECT_THROW(selective_scan(in.u, in.delta, in.A, in.B.narrow(2, 0, 2), in.C), std::exception);
}
