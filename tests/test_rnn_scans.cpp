// The fused matrix recurrences (mixers/{lstm,gru,elman}_scan.cpp) against their per-token tensor
// references (what LSTMImpl, GRUImpl and ElmanImpl ran before): values and the gradients of xi,
// W and b, the no-grad path, and bad shapes.
#include "seqlab/mixers/elman_scan.h"
#include "seqlab/mixers/gru_scan.h"
#include "seqlab/mixers/lstm_scan.h"
#include "seqlab/mixers/scan_common.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

using ScanFn = torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&);

struct RnnScan {
  const char* name;
  int64_t gates;  // G: xi [B,T,G*D], W [G*D,D], b [G*D]
  ScanFn fused, reference;
};

const RnnScan kScans[] = {{"lstm", 4, lstm_scan, lstm_scan_reference},
                          {"gru", 3, gru_scan, gru_scan_reference},
                          {"elman", 1, elman_scan, elman_scan_reference}};

// hs and the gradients of sum(hs * w) with respect to xi, W and b.
std::vector<torch::Tensor> value_and_grads(ScanFn scan, const torch::Tensor& xi,
                                           const torch::Tensor& W, const torch::Tensor& b,
                                           const torch::Tensor& w) {
  auto x = xi.clone().requires_grad_(), Wg = W.clone().requires_grad_();
  auto bg = b.clone().requires_grad_();
  auto hs = scan(x, Wg, bg);
  (hs * w).sum().backward();
  return {hs.detach(), x.grad(), Wg.grad(), bg.grad()};
}

void expect_matches_reference(const RnnScan& s, int64_t B, int64_t T, int64_t D, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t G = s.gates;
  const auto xi = torch::randn({B, T, G * D}), W = torch::randn({G * D, D}) / std::sqrt(D);
  const auto b = torch::randn({G * D}) * 0.5, w = torch::randn({B, T, D});
  const auto fused = value_and_grads(s.fused, xi, W, b, w);
  const auto ref = value_and_grads(s.reference, xi, W, b, w);
  const char* names[] = {"h", "grad xi", "grad W", "grad b"};
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_TRUE(rel_close(fused[i], ref[i], 2e-5, names[i]))
        << s.name << ": B " << B << " T " << T << " D " << D;
}

}  // namespace

TEST(RnnScans, MatchReferences) {
  for (const auto& s : kScans) {
    expect_matches_reference(s, 3, 1, 4, 1);
    expect_matches_reference(s, 2, 13, 5, 2);
    expect_matches_reference(s, 32, 81, 64, 3);
  }
}

TEST(RnnScans, NoGradPathMatchesAutogradPath) {
  for (const auto& s : kScans) {
    torch::manual_seed(4);
    const int64_t G = s.gates;
    const auto xi = torch::randn({2, 9, G * 3}), W = torch::randn({G * 3, 3});
    const auto b = torch::randn({G * 3});
    const auto with_graph = s.fused(xi.clone().requires_grad_(), W, b).detach();
    torch::NoGradGuard ng;
    EXPECT_TRUE(torch::equal(s.fused(xi, W, b), with_graph)) << s.name;
  }
}

TEST(RnnScans, RejectBadShapes) {
  for (const auto& s : kScans) {
    const int64_t G = s.gates;
    const auto xi = torch::randn({2, 5, G * 3}), W = torch::randn({G * 3, 3});
    const auto b = torch::randn({G * 3});
    EXPECT_THROW(s.fused(xi, W.narrow(1, 0, 2), b), std::exception) << s.name;
    EXPECT_THROW(s.fused(xi.narrow(2, 0, G * 3 - 1), W, b), std::exception) << s.name;
    EXPECT_THROW(s.fused(xi, W, b.narrow(0, 0, G * 3 - 1)), std::exception) << s.name;
  }
}

TEST(RnnScans, ReferenceScansGiveADoubleBackward) {
  // The fused nodes have no double backward; under ReferenceScans (what the DEQ's Jacobian term
  // builds its graph in) the gradient of a gradient reaches W, as autograd's reference gives it.
  for (const auto& s : kScans) {
    torch::manual_seed(6);
    const int64_t G = s.gates;
    auto xi = torch::randn({2, 7, G * 4}).requires_grad_(), W = torch::randn({G * 4, 4});
    W.requires_grad_();
    const auto b = torch::randn({G * 4});
    ReferenceScans twice;
    ASSERT_TRUE(scan_reference_requested());
    auto gx = torch::autograd::grad({s.fused(xi, W, b).pow(2).sum()}, {xi}, {}, true, true)[0];
    gx.pow(2).sum().backward();
    ASSERT_TRUE(W.grad().defined()) << s.name;
    EXPECT_GT(W.grad().abs().sum().item<double>(), 0.0) << s.name;
  }
  EXPECT_FALSE(scan_reference_requested());  // the guard restores the flag
}
