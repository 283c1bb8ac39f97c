#include "seqlab/model/adapters.h"

#include "seqlab/core/error.h"

#include <cmath>
#include <sstream>

namespace seqlab {

namespace {

// A plain container module: adapters nest parameters under readable names.
struct HolderImpl : torch::nn::Module {
  using torch::nn::Module::register_module;
  using torch::nn::Module::register_parameter;
};
TORCH_MODULE(Holder);

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

void AdapterConfig::validate() const {
  SEQLAB_CHECK(kind == "none" || kind == "lora" || kind == "tied_lora",
               "--adapter must be none, lora or tied_lora, got '{}'", kind);
  if (kind == "none") return;
  SEQLAB_CHECK(rank > 0, "--lora-rank must be positive, got {}", rank);
  SEQLAB_CHECK(alpha > 0 && std::isfinite(alpha), "--lora-alpha must be positive, got {}", alpha);
  auto t = target_list();
  SEQLAB_CHECK(!t.empty(), "--lora-targets is empty (expected e.g. q,v)");
  for (size_t i = 0; i < t.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      SEQLAB_CHECK(t[i] != t[j], "--lora-targets names '{}' twice", t[i]);
  if (kind == "tied_lora")
    for (const auto& f : split_commas(train))
      SEQLAB_CHECK(f == "A" || f == "B" || f == "u" || f == "v",
                   "--tied-train: '{}' is not one of A,B,u,v", f);
}

std::vector<std::string> AdapterConfig::target_list() const {
  return split_commas(targets);
}

bool AdapterConfig::trains(char factor) const {
  if (kind == "lora") return factor == 'A' || factor == 'B';
  for (const auto& f : split_commas(train))
    if (f.size() == 1 && f[0] == factor) return true;
  return false;
}

nlohmann::json AdapterConfig::to_json() const {
  nlohmann::json j;
  const_cast<AdapterConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

AdapterConfig AdapterConfig::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: adapter config must be a JSON object", source);
  AdapterConfig c;
  FromJsonVisitor v{j, source, {}};
  c.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown adapter field '{}'", source, it.key());
  c.validate();
  return c;
}

AdaptersImpl::AdaptersImpl(const AdapterConfig& cfg, torch::nn::ModuleList blocks) : cfg_(cfg) {
  cfg_.validate();
  SEQLAB_CHECK(cfg_.kind != "none", "no adapter to attach (--adapter none)");
  const auto targets = cfg_.target_list();
  const bool tied = cfg_.kind == "tied_lora";
  const int64_t r = cfg_.rank;
  // Find the targets: Linear modules of each block by the last component of their path.
  for (size_t l = 0; l < blocks->size(); ++l) {
    auto block = blocks->ptr(l);
    std::map<std::string, torch::nn::Linear> found;
    std::string available;
    for (const auto& m : block->named_modules("", /*include_self=*/false)) {
      auto lin = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m.value());
      if (!lin) continue;
      const auto& path = m.key();
      const std::string leaf =
          path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
      found.emplace(leaf, torch::nn::Linear(lin));
      available += (available.empty() ? "" : ",") + leaf;
    }
    for (const auto& t : targets) {
      auto it = found.find(t);
      SEQLAB_CHECK(it != found.end(),
                   "adapter target '{}' names no linear layer in block {} (available: {})", t, l,
                   available);
      adapted_.push_back({static_cast<int64_t>(l), t, it->second, it->second->weight});
    }
  }
  // Parameters. Random factors come from a generator of their own: attaching adapters does not
  // disturb the global RNG stream.
  auto gen = at::detail::createCPUGenerator(cfg_.seed);
  auto randn = [&](int64_t a, int64_t b, double sd) { return at::normal(0.0, sd, {a, b}, gen); };
  auto layers = register_module("layers", Holder());
  Holder shared{nullptr};
  if (tied) shared = register_module("shared", Holder());
  std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> shared_ab;
  for (const auto& t : targets) {
    if (!tied) break;
    const auto& w = adapted_[&t - &targets[0]].base;  // block 0's layer: same shape in all blocks
    const int64_t out = w.size(0), in = w.size(1);
    auto A = randn(r, in, 1.0 / std::sqrt(static_cast<double>(in)));
    auto B = randn(out, r, 1.0 / std::sqrt(static_cast<double>(r)));
    auto holder = shared->register_module(t, Holder());
    if (cfg_.trains('B')) {
      B.zero_();
    } else if (!cfg_.trains('v') && !cfg_.trains('u') && cfg_.trains('A')) {
      A.zero_();
    }
    // register_parameter returns a reference into the module's parameter list, which the next
    // registration may reallocate: copy each handle before registering the next (ASan found the
    // two calls in one braced pair reading a freed reference).
    torch::Tensor a_param = holder->register_parameter("A", A, cfg_.trains('A'));
    torch::Tensor b_param = holder->register_parameter("B", B, cfg_.trains('B'));
    shared_ab[t] = {a_param, b_param};
  }
  std::map<int64_t, Holder> per_layer;
  for (const auto& a : adapted_) {
    const int64_t out = a.base.size(0), in = a.base.size(1);
    SEQLAB_CHECK(!tied || (out == shared_ab[a.target].second.size(0) &&
                           in == shared_ab[a.target].first.size(1)),
                 "tied_lora: target '{}' has a different shape in block {}", a.target, a.layer);
    if (!per_layer.count(a.layer))
      per_layer[a.layer] = layers->register_module(std::to_string(a.layer), Holder());
    auto holder = per_layer[a.layer]->register_module(a.target, Holder());
    std::array<torch::Tensor, 4> f;
    if (!tied) {
      f[0] =
          holder->register_parameter("A", randn(r, in, 1.0 / std::sqrt(static_cast<double>(in))));
      f[1] = holder->register_parameter("B", torch::zeros({out, r}));
    } else {
      auto u = torch::ones({r});
      auto v = torch::ones({out});
      // The first trained factor in the order B, v, u, A starts at zero (see the header).
      if (!cfg_.trains('B')) {
        if (cfg_.trains('v'))
          v.zero_();
        else if (cfg_.trains('u'))
          u.zero_();
      }
      f[0] = shared_ab[a.target].first;
      f[1] = shared_ab[a.target].second;
      f[2] = holder->register_parameter("u", u, cfg_.trains('u'));
      f[3] = holder->register_parameter("v", v, cfg_.trains('v'));
    }
    factors_.push_back(f);
  }
  // A frozen B with frozen u and v: the delta is fixed and nonzero unless A starts at zero, which
  // the shared initialisation above did when A is the only trained factor. With nothing trained
  // at all the delta must still be zero.
  if (tied && !cfg_.trains('A') && !cfg_.trains('B') && !cfg_.trains('u') && !cfg_.trains('v')) {
    torch::NoGradGuard ng;
    for (auto& [t, ab] : shared_ab) ab.second.zero_();
  }
}

torch::Tensor AdaptersImpl::delta(size_t i) const {
  const auto& f = factors_[i];
  const double scale = cfg_.alpha / static_cast<double>(cfg_.rank);
  if (cfg_.kind == "lora") return torch::matmul(f[1], f[0]) * scale;  // [out,r] @ [r,in]
  auto B = f[1] * f[3].unsqueeze(1);                                  // diag(v) B      [out,r]
  auto A = f[0] * f[2].unsqueeze(1);                                  // diag(u) A      [r,in]
  return torch::matmul(B, A) * scale;                                 // [out,in]
}

void AdaptersImpl::apply() {
  for (size_t i = 0; i < adapted_.size(); ++i)
    adapted_[i].linear->weight = adapted_[i].base + delta(i).to(adapted_[i].base.dtype());
}

void AdaptersImpl::restore() {
  for (auto& a : adapted_) a.linear->weight = a.base;
}

void AdaptersImpl::merge() {
  torch::NoGradGuard ng;
  std::vector<torch::Tensor> d;
  for (size_t i = 0; i < adapted_.size(); ++i) d.push_back(delta(i));
  for (size_t i = 0; i < adapted_.size(); ++i)
    adapted_[i].base.add_(d[i].to(adapted_[i].base.dtype()));
  restore();
}

int64_t AdaptersImpl::expected_trainable() const {
  const auto targets = cfg_.target_list();
  const int64_t r = cfg_.rank;
  int64_t L = 0;
  for (const auto& a : adapted_) L = std::max(L, a.layer + 1);
  int64_t n = 0;
  for (const auto& t : targets) {
    int64_t out = 0, in = 0;
    for (const auto& a : adapted_)
      if (a.target == t) out = a.base.size(0), in = a.base.size(1);
    if (cfg_.kind == "lora") {
      n += L * r * (in + out);
    } else {
      n += (cfg_.trains('A') ? r * in : 0) + (cfg_.trains('B') ? out * r : 0) +
           L * ((cfg_.trains('u') ? r : 0) + (cfg_.trains('v') ? out : 0));
    }
  }
  return n;
}

}  // namespace seqlab
