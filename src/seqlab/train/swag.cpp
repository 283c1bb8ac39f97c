#include "seqlab/train/swag.h"

#include "seqlab/core/error.h"

#include <cmath>

namespace seqlab {

Swag::Swag(const std::vector<std::pair<std::string, torch::Tensor>>& params, int64_t rank)
    : rank_(rank) {
  SEQLAB_CHECK(rank >= 0, "SWAG rank must be >= 0, got {}", rank);
  for (const auto& [name, p] : params) {
    names_.push_back(name);
    auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    mean_[name] = torch::zeros(p.sizes(), opts);
    sq_[name] = torch::zeros(p.sizes(), opts);
    auto shape = p.sizes().vec();
    shape.insert(shape.begin(), rank);
    dev_[name] = torch::zeros(shape, opts);
  }
}

void Swag::collect(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  SEQLAB_CHECK(params.size() == names_.size(), "SWAG: {} parameters collected, {} expected",
               params.size(), names_.size());
  torch::NoGradGuard ng;
  n_ += 1;
  const double inv = 1.0 / static_cast<double>(n_);
  for (const auto& [name, p] : params) {
    SEQLAB_CHECK(mean_.count(name), "SWAG: no moments for parameter '{}'", name);
    auto w = p.detach().to(torch::kFloat64).cpu();
    auto& m = mean_[name];
    m.add_((w - m) * inv);
    sq_[name].add_((w * w - sq_[name]) * inv);
    if (rank_ > 0) dev_[name].select(0, next_).copy_(w - m);
  }
  if (rank_ > 0) next_ = (next_ + 1) % rank_;
}

std::map<std::string, torch::Tensor> Swag::variance() const {
  std::map<std::string, torch::Tensor> v;
  for (const auto& name : names_)
    v[name] = (sq_.at(name) - mean_.at(name) * mean_.at(name)).clamp_min(0.0);
  return v;
}

torch::Tensor Swag::deviations(const std::string& name) const {
  const auto& d = dev_.at(name);
  const int64_t c = columns();
  if (c < rank_) return d.narrow(0, 0, c);
  // A full ring: the oldest column is the next one to be overwritten.
  return torch::cat({d.narrow(0, next_, rank_ - next_), d.narrow(0, 0, next_)});
}

std::map<std::string, torch::Tensor> Swag::sample(double scale, torch::Generator& gen) const {
  SEQLAB_CHECK(n_ > 0, "SWAG has no snapshots (was --swag-start inside the run?)");
  SEQLAB_CHECK(scale >= 0 && std::isfinite(scale), "SWAG scale must be >= 0, got {}", scale);
  const int64_t c = columns();
  const bool low_rank = c >= 2;
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  auto z2 = low_rank ? torch::randn({c}, gen, opts) : torch::Tensor();  // shared by all params
  const auto var = variance();
  std::map<std::string, torch::Tensor> out;
  for (const auto& name : names_) {
    const auto& m = mean_.at(name);
    if (scale == 0) {
      out[name] = m.to(torch::kFloat32);
      continue;
    }
    auto z1 = torch::randn(m.sizes(), gen, opts);
    torch::Tensor w;
    if (low_rank) {
      auto d = deviations(name).reshape({c, -1});                      // [c,P]
      auto lr = torch::matmul(z2.unsqueeze(0), d).reshape(m.sizes());  // [..]
      w = m + std::sqrt(scale) * (torch::sqrt(var.at(name) / 2.0) * z1 +
                                  lr / std::sqrt(2.0 * static_cast<double>(c - 1)));  // [..]
    } else {
      w = m + std::sqrt(scale) * torch::sqrt(var.at(name)) * z1;
    }
    out[name] = w.to(torch::kFloat32);
  }
  return out;
}

std::map<std::string, torch::Tensor> Swag::to_tensors() const {
  std::map<std::string, torch::Tensor> t;
  for (const auto& name : names_) {
    t["swag.mean." + name] = mean_.at(name);
    t["swag.sq." + name] = sq_.at(name);
    t["swag.dev." + name] = dev_.at(name);
  }
  t["swag.meta"] = torch::tensor({n_, rank_, next_}, torch::kLong);
  return t;
}

Swag Swag::from_tensors(const std::map<std::string, torch::Tensor>& t, const std::string& source) {
  auto meta = t.find("swag.meta");
  SEQLAB_CHECK(meta != t.end() && meta->second.numel() == 3, "{}: missing 'swag.meta'", source);
  Swag s;
  auto m = meta->second.to(torch::kLong);
  s.n_ = m[0].item<int64_t>();
  s.rank_ = m[1].item<int64_t>();
  s.next_ = m[2].item<int64_t>();
  SEQLAB_CHECK(s.n_ >= 0 && s.rank_ >= 0 && s.next_ >= 0 && (s.rank_ == 0 || s.next_ < s.rank_),
               "{}: invalid swag.meta", source);
  const std::string prefix = "swag.mean.";
  for (const auto& [k, v] : t) {
    if (k.rfind(prefix, 0) != 0) continue;
    const std::string name = k.substr(prefix.size());
    auto sq = t.find("swag.sq." + name);
    auto dev = t.find("swag.dev." + name);
    SEQLAB_CHECK(sq != t.end() && dev != t.end(), "{}: SWAG moments of '{}' are incomplete", source,
                 name);
    SEQLAB_CHECK(sq->second.sizes() == v.sizes() && dev->second.dim() == v.dim() + 1 &&
                     dev->second.size(0) == s.rank_ && dev->second.sizes().slice(1) == v.sizes(),
                 "{}: SWAG moments of '{}' have inconsistent shapes", source, name);
    s.names_.push_back(name);
    s.mean_[name] = v.to(torch::kFloat64);
    s.sq_[name] = sq->second.to(torch::kFloat64);
    s.dev_[name] = dev->second.to(torch::kFloat64);
  }
  SEQLAB_CHECK(!s.names_.empty(), "{}: no SWAG moments", source);
  return s;
}

}  // namespace seqlab
