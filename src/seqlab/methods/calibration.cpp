#include "seqlab/methods/calibration.h"

#include "seqlab/core/error.h"

#include <cmath>

namespace seqlab {

namespace {

void check_probs(const torch::Tensor& probs, const torch::Tensor& target) {
  SEQLAB_CHECK(probs.dim() == 2 && target.dim() == 1 && probs.size(0) == target.size(0),
               "expected probs [N,C] and target [N], got {} and {} dims", probs.dim(),
               target.dim());
}

// Average ranks (1-based) of x [N], ties sharing the mean of their ranks.
torch::Tensor ranks(const torch::Tensor& x) {
  auto v = x.to(torch::kFloat64).contiguous();
  const int64_t n = v.numel();
  auto order = v.argsort();
  auto sorted = v.index_select(0, order);
  auto r = torch::empty({n}, torch::kFloat64);
  auto* sp = sorted.data_ptr<double>();
  auto* op = order.data_ptr<int64_t>();
  auto* rp = r.data_ptr<double>();
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j + 1 < n && sp[j + 1] == sp[i]) ++j;
    const double avg = 0.5 * static_cast<double>(i + j) + 1.0;
    for (int64_t k = i; k <= j; ++k) rp[op[k]] = avg;
    i = j + 1;
  }
  return r;
}

}  // namespace

double expected_calibration_error(const torch::Tensor& probs, const torch::Tensor& target,
                                  int64_t bins) {
  check_probs(probs, target);
  SEQLAB_CHECK(bins > 0, "ECE needs bins > 0, got {}", bins);
  const int64_t n = probs.size(0);
  if (n == 0) return 0;
  auto [conf, pred] = probs.to(torch::kFloat64).max(-1);  // [N], [N]
  auto right = pred.eq(target).to(torch::kFloat64);       // [N]
  // Bin b holds confidences in (b/bins, (b+1)/bins]; confidence 0 goes to bin 0.
  auto bin = (conf * static_cast<double>(bins)).ceil().to(torch::kLong).sub(1).clamp(0, bins - 1);
  double ece = 0;
  for (int64_t b = 0; b < bins; ++b) {
    auto in = bin.eq(b);
    const int64_t count = in.sum().item<int64_t>();
    if (count == 0) continue;
    const double acc = right.masked_select(in).mean().item<double>();
    const double c = conf.masked_select(in).mean().item<double>();
    ece += static_cast<double>(count) / static_cast<double>(n) * std::abs(acc - c);
  }
  return ece;
}

double mean_nll(const torch::Tensor& probs, const torch::Tensor& target) {
  check_probs(probs, target);
  auto p = probs.to(torch::kFloat64).gather(1, target.unsqueeze(1)).squeeze(1);  // [N]
  return -p.clamp_min(1e-12).log().mean().item<double>();
}

double fit_temperature(const torch::Tensor& logits, const torch::Tensor& target) {
  check_probs(logits, target);
  auto l = logits.to(torch::kFloat64);
  auto nll_at = [&](double log_beta) {
    auto lp = torch::log_softmax(l * std::exp(log_beta), -1);
    return -lp.gather(1, target.unsqueeze(1)).mean().item<double>();
  };
  // Golden-section search on log(1/T): NLL(beta) is convex in beta, hence unimodal in log beta.
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = std::log(1e-3), b = std::log(1e3);
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = nll_at(c), fd = nll_at(d);
  while (b - a > 1e-6) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - g * (b - a), fc = nll_at(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + g * (b - a), fd = nll_at(d);
    }
  }
  return 1.0 / std::exp(0.5 * (a + b));
}

torch::Tensor entropy(const torch::Tensor& probs) {
  auto p = probs.to(torch::kFloat64);
  return -(p * p.clamp_min(1e-30).log()).sum(-1);
}

double pearson(const torch::Tensor& a, const torch::Tensor& b) {
  SEQLAB_CHECK(a.numel() == b.numel(), "pearson: sizes differ ({} vs {})", a.numel(), b.numel());
  auto x = a.to(torch::kFloat64).flatten(), y = b.to(torch::kFloat64).flatten();
  x = x - x.mean();
  y = y - y.mean();
  const double den = std::sqrt((x * x).sum().item<double>() * (y * y).sum().item<double>());
  return den > 0 ? (x * y).sum().item<double>() / den : 0.0;
}

double spearman(const torch::Tensor& a, const torch::Tensor& b) {
  return pearson(ranks(a.flatten()), ranks(b.flatten()));
}

double mean_kl(const torch::Tensor& p, const torch::Tensor& q) {
  SEQLAB_CHECK(p.sizes() == q.sizes() && p.dim() == 2, "mean_kl: expected two [N,C] tensors");
  auto pp = p.to(torch::kFloat64), qq = q.to(torch::kFloat64);
  auto terms = torch::where(pp > 0, pp * (pp.clamp_min(1e-30).log() - qq.clamp_min(1e-12).log()),
                            torch::zeros_like(pp));
  return terms.sum(-1).mean().item<double>();
}

}  // namespace seqlab
