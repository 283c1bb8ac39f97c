// The fused linear recurrence (mixers/linear_scan.cpp) against the per-token tensor reference:
// values and both gradients, with and without autograd, on views, and independent of the thread
// count.
#include "seqlab/mixers/linear_scan.h"

#include "mixer_testing.h"

#include <ATen/Parallel.h>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

// a in (0, 1) like QRNN's forget gate, b anything.
std::pair<torch::Tensor, torch::Tensor> make_inputs(int64_t Bn, int64_t T, int64_t D,
                                                    torch::Dtype type, uint64_t seed) {
  torch::manual_seed(seed);
  const auto o = torch::TensorOptions().dtype(type);
  return {torch::sigmoid(torch::randn({Bn, T, D}, o) + 1.0), torch::randn({Bn, T, D}, o)};
}

// c and the gradients of sum(c * w) with respect to a and b.
template <typename Scan>
std::vector<torch::Tensor> value_and_grads(Scan scan, const torch::Tensor& a,
                                           const torch::Tensor& b, const torch::Tensor& w) {
  auto x = a.clone().requires_grad_(), y = b.clone().requires_grad_();
  auto c = scan(x, y);
  (c * w).sum().backward();
  // At T = 1 the reference never reads a, so autograd leaves its gradient undefined: zero.
  const auto ga = x.grad().defined() ? x.grad() : torch::zeros_like(x);
  return {c.detach(), ga, y.grad()};
}

void expect_matches_reference(int64_t Bn, int64_t T, int64_t D, torch::Dtype type, double tol) {
  const auto [a, b] = make_inputs(Bn, T, D, type, 3);
  const auto w = torch::randn({Bn, T, D}, torch::TensorOptions().dtype(type));
  const auto fused = value_and_grads(linear_scan, a, b, w);
  const auto ref = value_and_grads(linear_scan_reference, a, b, w);
  const char* names[] = {"c", "grad a", "grad b"};
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_TRUE(rel_close(fused[i], ref[i], tol, names[i]))
        << "B " << Bn << " T " << T << " D " << D;
}

}  // namespace

TEST(LinearScan, MatchesReference) {
  expect_matches_reference(2, 1, 5, torch::kDouble, 1e-14);
  expect_matches_reference(3, 37, 7, torch::kDouble, 1e-13);
  expect_matches_reference(4, 121, 64, torch::kFloat, 1e-5);
}

TEST(LinearScan, MatchesTheRecurrenceWrittenOut) {
  const auto [a, b] = make_inputs(2, 9, 3, torch::kDouble, 5);
  const auto c = linear_scan(a, b);
  auto ref = torch::zeros_like(a);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t d = 0; d < 3; ++d) {
      double h = 0;
      for (int64_t t = 0; t < 9; ++t) {
        h = a[r][t][d].item<double>() * h + b[r][t][d].item<double>();
        ref[r][t][d] = h;
      }
    }
  EXPECT_TRUE(all_close(c, ref, 1e-14, "written out"));
}

TEST(LinearScan, NoGradPathMatchesAutogradPathAndViewsWork) {
  const auto [a, b] = make_inputs(3, 20, 8, torch::kFloat, 7);
  torch::Tensor with_graph;
  {
    auto x = a.clone().requires_grad_();
    with_graph = linear_scan(x, b).detach();
  }
  torch::NoGradGuard ng;
  EXPECT_TRUE(torch::equal(with_graph, linear_scan(a, b)));
  const auto at = a.transpose(1, 2).contiguous().transpose(1, 2);
  ASSERT_FALSE(at.is_contiguous());
  EXPECT_TRUE(torch::equal(linear_scan(at, b), with_graph));
}

TEST(LinearScan, SameResultOnOneThreadAndTwo) {
  const auto [a, b] = make_inputs(4, 30, 16, torch::kFloat, 9);
  const auto w = torch::randn({4, 30, 16});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = value_and_grads(linear_scan, a, b, w);
  at::set_num_threads(2);
  const auto two = value_and_grads(linear_scan, a, b, w);
  at::set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(torch::equal(one[i], two[i])) << i;
}

TEST(LinearScan, RejectsBadShapes) {
  const auto [a, b] = make_inputs(2, 5, 4, torch::kFloat, 1);
  EXPECT_THROW(linear_scan(a, b.narrow(1, 0, 4)), std::exception);
  EXPECT_THROW(linear_scan(a[0], b[0]), std::exception);
}
