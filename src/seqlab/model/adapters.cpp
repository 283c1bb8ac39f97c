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
  if (kind != "tied_lora") return;
  for (const auto& f : split_commas(train))
    SEQLAB_CHECK(f == "A" || f == "B" || f == "u" || f == "v",
                 "--tied-train: '{}' is not one of A,B,u,v", f);
  for (const auto& f : split_commas(share))
    SEQLAB_CHECK(f == "A" || f == "B", "--tied-share: '{}' is not one of A,B", f);
}

std::vector<std::string> AdapterConfig::target_list() const {
  return split_commas(targets);
}

bool AdapterConfig::shares(char factor) const {
  if (kind != "tied_lora") return false;
  for (const auto& f : split_commas(share))
    if (f.size() == 1 && f[0] == factor) return true;
  return false;
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

namespace {

// Every target Linear of every block, in block order (an unknown target is an Error listing the
// available names).
std::vector<AdaptedLinear> find_adapted(const std::vector<std::string>& targets,
                                        torch::nn::ModuleList blocks) {
  std::vector<AdaptedLinear> adapted;
  // Linear modules of each block, by the last component of their path.
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
      adapted.push_back({static_cast<int64_t>(l), t, it->second, it->second->weight});
    }
  }
  return adapted;
}

}  // namespace

AdaptersImpl::AdaptersImpl(const AdapterConfig& cfg, torch::nn::ModuleList blocks) : cfg_(cfg) {
  cfg_.validate();
  SEQLAB_CHECK(cfg_.kind != "none", "no adapter to attach (--adapter none)");
  const auto targets = cfg_.target_list();
  adapted_ = find_adapted(targets, blocks);
  const bool tied = cfg_.kind == "tied_lora";
  const int64_t r = cfg_.rank;
  // Random factors come from a generator of their own: attaching adapters does not disturb the
  // global RNG stream.
  auto gen = at::detail::createCPUGenerator(cfg_.seed);
  auto randn = [&](int64_t a, int64_t b, double sd) { return at::normal(0.0, sd, {a, b}, gen); };
  // Tied-LoRA starts at the base model: the first trained factor in the order B, v, u, A starts
  // at zero (with nothing trained, B does: the adapter is a no-op).
  char zero = 'B';
  for (char f : {'B', 'v', 'u', 'A'})
    if (tied && cfg_.trains(f)) {
      zero = f;
      break;
    }
  // A [r,in] ~ N(0, 1/in) and B [out,r] ~ N(0, 1/r) (Tied-LoRA) or 0 (LoRA); registered frozen
  // unless they train. register_parameter returns a reference into the module's parameter list,
  // which the next registration may reallocate: the handle is copied before the next one (ASan
  // found the two calls in one braced pair reading a freed reference).
  auto make_a = [&](const auto& h, int64_t in) {
    auto A = randn(r, in, 1.0 / std::sqrt(static_cast<double>(in)));
    if (tied && zero == 'A') A.zero_();
    torch::Tensor p = h->register_parameter("A", A, !tied || cfg_.trains('A'));
    return p;
  };
  auto make_b = [&](const auto& h, int64_t out) {
    if (!tied) return h->register_parameter("B", torch::zeros({out, r}));
    auto B = randn(out, r, 1.0 / std::sqrt(static_cast<double>(r)));
    if (zero == 'B') B.zero_();
    torch::Tensor p = h->register_parameter("B", B, cfg_.trains('B'));
    return p;
  };
  auto layers = register_module("layers", Holder());
  // The shared factors of each target (block 0's layer gives the shape: the same in all blocks).
  std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> shared_ab;
  if (tied && (cfg_.shares('A') || cfg_.shares('B'))) {
    auto shared = register_module("shared", Holder());
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto& w = adapted_[i].base;
      auto holder = shared->register_module(targets[i], Holder());
      auto& ab = shared_ab[targets[i]];
      if (cfg_.shares('A')) ab.first = make_a(holder, w.size(1));
      if (cfg_.shares('B')) ab.second = make_b(holder, w.size(0));
    }
  }
  std::map<int64_t, Holder> per_layer;
  for (const auto& a : adapted_) {
    const int64_t out = a.base.size(0), in = a.base.size(1);
    if (!per_layer.count(a.layer))
      per_layer[a.layer] = layers->register_module(std::to_string(a.layer), Holder());
    auto holder = per_layer[a.layer]->register_module(a.target, Holder());
    std::array<torch::Tensor, 4> f;
    const auto& ab = shared_ab[a.target];
    SEQLAB_CHECK(!ab.first.defined() || ab.first.size(1) == in,
                 "tied_lora: target '{}' has a different shape in block {}", a.target, a.layer);
    SEQLAB_CHECK(!ab.second.defined() || ab.second.size(0) == out,
                 "tied_lora: target '{}' has a different shape in block {}", a.target, a.layer);
    f[0] = ab.first.defined() ? ab.first : make_a(holder, in);
    f[1] = ab.second.defined() ? ab.second : make_b(holder, out);
    if (tied) {
      auto u = torch::ones({r});
      auto v = torch::ones({out});
      if (zero == 'u') u.zero_();
      if (zero == 'v') v.zero_();
      f[2] = holder->register_parameter("u", u, cfg_.trains('u'));
      f[3] = holder->register_parameter("v", v, cfg_.trains('v'));
    }
    factors_.push_back(f);
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
      const int64_t nA = cfg_.shares('A') ? 1 : L, nB = cfg_.shares('B') ? 1 : L;
      n += (cfg_.trains('A') ? r * in * nA : 0) + (cfg_.trains('B') ? out * r * nB : 0) +
           L * ((cfg_.trains('u') ? r : 0) + (cfg_.trains('v') ? out : 0));
    }
  }
  return n;
}

}  // namespace seqlab
