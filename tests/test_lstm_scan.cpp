// The fused LSTM recurrence (mixers/lstm_scan.cpp) against the per-token tensor reference (what
// LSTMImpl ran before): values and the gradients of xi, W and b.
#include "seqlab/mixers/lstm_scan.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

// hs and the gradients of sum(hs * w) with respect to xi, w_hh and b_hh.
template <typename Scan>
std::vector<torch::Tensor> value_and_grads(Scan scan, const torch::Tensor& xi,
                                           const torch::Tensor& W, const torch::Tensor& b,
                                           const torch::Tensor& w) {
  auto x = xi.clone().requires_grad_(), Wg = W.clone().requires_grad_();
  auto bg = b.clone().requires_grad_();
  auto hs = scan(x, Wg, bg);
  (hs * w).sum().backward();
  return {hs.detach(), x.grad(), Wg.grad(), bg.grad()};
}

void expect_matches_reference(int64_t B, int64_t T, int64_t D, uint64_t seed) {
  torch::manual_seed(seed);
  const auto xi = torch::randn({B, T, 4 * D}), W = torch::randn({4 * D, D}) / std::sqrt(D);
  const auto b = torch::randn({4 * D}) * 0.5, w = torch::randn({B, T, D});
  const auto fused = value_and_grads(lstm_scan, xi, W, b, w);
  const auto ref = value_and_grads(lstm_scan_reference, xi, W, b, w);
  const char* names[] = {"h", "grad xi", "grad W", "grad b"};
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_TRUE(rel_close(fused[i], ref[i], 2e-5, names[i]))
        << "B " << B << " T " << T << " D " << D;
}

}  // namespace

TEST(LstmScan, MatchesReference) {
  expect_matches_reference(3, 1, 4, 1);
  expect_matches_reference(2, 13, 5, 2);
  expect_matches_reference(32, 81, 64, 3);
}

TEST(LstmScan, NoGradPathMatchesAutogradPath) {
  torch::manual_seed(4);
  const auto xi = torch::randn({2, 9, 12}), W = torch::randn({12, 3}), b = torch::randn({12});
  const auto with_graph = lstm_scan(xi.clone().requires_grad_(), W, b).detach();
  torch::NoGradGuard ng;
  EXPECT_TRUE(torch::equal(lstm_scan(xi, W, b), with_graph));
}

TEST(LstmScan, RejectsBadShapes) {
  const auto xi = torch::randn({2, 5, 12}), W = torch::randn({12, 3}), b = torch::randn({12});
  EXPECT_THROW(lstm_scan(xi, W.t(), b), std::exception);
  EXPECT_THROW(lstm_scan(xi.narrow(2, 0, 8), W, b), std::exception);
  EXPECT_THROW(lstm_scan(xi, W, b.narrow(0, 0, 8)), std::exception);
}
