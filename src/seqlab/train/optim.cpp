#include "seqlab/train/optim.h"

#include "seqlab/core/error.h"

#include <fmt/ranges.h>

#include <cmath>

namespace seqlab {

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> params, AdamWOptions opt)
    : params_(std::move(params)), opt_(opt) {
  for (auto& [name, p] : params_) {
    m_.push_back(torch::zeros_like(p));
    v_.push_back(torch::zeros_like(p));
  }
}

void AdamW::zero_grad() {
  for (auto& [name, p] : params_)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

void AdamW::step(double lr) {
  torch::NoGradGuard ng;
  t_ += 1;
  const double bc1 = 1.0 - std::pow(opt_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(opt_.beta2, static_cast<double>(t_));
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i].second;
    if (!p.grad().defined()) continue;
    const auto& g = p.grad();
    if (opt_.weight_decay > 0 && p.dim() >= 2) p.mul_(1.0 - lr * opt_.weight_decay);
    m_[i].mul_(opt_.beta1).add_(g, 1.0 - opt_.beta1);
    v_[i].mul_(opt_.beta2).addcmul_(g, g, 1.0 - opt_.beta2);
    auto denom = (v_[i] / bc2).sqrt_().add_(opt_.eps);
    p.addcdiv_(m_[i], denom, -lr / bc1);
  }
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> s;
  s.emplace_back("adam.t", torch::tensor({t_}, torch::kLong));
  for (size_t i = 0; i < params_.size(); ++i) {
    s.emplace_back("adam.m." + params_[i].first, m_[i]);
    s.emplace_back("adam.v." + params_[i].first, v_[i]);
  }
  return s;
}

void AdamW::load_state(const std::map<std::string, torch::Tensor>& s, const std::string& source) {
  auto get = [&](const std::string& key, const torch::Tensor& like) {
    auto it = s.find(key);
    SEQLAB_CHECK(it != s.end(), "{}: missing optimizer tensor '{}'", source, key);
    SEQLAB_CHECK(it->second.sizes() == like.sizes(),
                 "{}: optimizer tensor '{}' has shape [{}], expected [{}]", source, key,
                 fmt::join(it->second.sizes(), ","), fmt::join(like.sizes(), ","));
    return it->second.to(like.options());
  };
  auto t = s.find("adam.t");
  SEQLAB_CHECK(t != s.end() && t->second.numel() == 1, "{}: missing optimizer step 'adam.t'",
               source);
  t_ = t->second.to(torch::kLong).item<int64_t>();
  for (size_t i = 0; i < params_.size(); ++i) {
    m_[i] = get("adam.m." + params_[i].first, params_[i].second);
    v_[i] = get("adam.v." + params_[i].first, params_[i].second);
  }
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard ng;
  double sq = 0;
  for (const auto& p : params)
    if (p.grad().defined()) sq += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().mul_(scale);
  }
  return norm;
}

double lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_ratio) {
  if (warmup > 0 && step < warmup) return lr * (step + 1) / static_cast<double>(warmup);
  const int64_t span = std::max<int64_t>(1, total - warmup);
  const double progress = std::min(1.0, (step - warmup) / static_cast<double>(span));
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return lr * (min_ratio + (1.0 - min_ratio) * cosine);
}

}  // namespace seqlab
