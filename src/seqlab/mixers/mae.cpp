#include "seqlab/mixers/mae.h"

#include "seqlab/mixers/registry.h"

namespace seqlab {

void MaeState::for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) {
  attn->for_each([&](const std::string& name, torch::Tensor& t) { f("attn." + name, t); });
  f("sum", sum);
  f("count", count);
}

std::unique_ptr<MixerState> MaeState::clone() const {
  auto c = std::make_unique<MaeState>();
  c->attn = attn->clone();
  c->sum = sum.clone();
  c->count = count.clone();
  return c;
}

MaeGateImpl::MaeGateImpl(int64_t d_model, int64_t d_hidden, int64_t n_head) {
  fc1 = register_module("fc1", torch::nn::Linear(d_model, d_hidden));
  fc2 = register_module("fc2", torch::nn::Linear(d_hidden, n_head));
}

torch::Tensor MaeGateImpl::forward(const torch::Tensor& u) {
  return torch::softmax(fc2(torch::tanh(fc1(u))), -1);  // [...,D] -> [...,H]
}

MaeImpl::MaeImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  SEQLAB_CHECK(cfg.mae && arch_entry(cfg.arch).traits.attention, "MAE wraps {}, not '{}'",
               attention_arch_names("or"), cfg.arch);
  SEQLAB_CHECK(cfg.n_head >= 2, "MAE needs at least 2 heads (each expert drops one), got {}",
               cfg.n_head);
  MixerConfig inner = cfg;
  inner.mae = false;
  attn_ = make_mixer(inner);
  heads_ = dynamic_cast<HeadsMixer*>(attn_.get());
  SEQLAB_CHECK(heads_, "MAE: mixer '{}' does not expose its heads (HeadsMixer)", cfg.arch);
  // The attention's submodules become ours, under their own names, so that the parameters keep
  // the names conversion and import rely on (q, k, v, o, feature_map.*). The attention holds no
  // tensors of its own outside them.
  SEQLAB_CHECK(attn_->named_parameters(false).is_empty() && attn_->named_buffers(false).is_empty(),
               "MAE: the wrapped attention holds tensors outside its submodules");
  for (const auto& c : attn_->named_children()) register_module(c.key(), c.value());
  o_ = std::dynamic_pointer_cast<torch::nn::LinearImpl>(attn_->named_children()["o"]);
  SEQLAB_CHECK(o_, "MAE: the wrapped attention has no output projection 'o'");
  const int64_t G = cfg.mae_gate_hidden > 0 ? cfg.mae_gate_hidden : cfg.d_model;
  gate = register_module("gate", MaeGate(cfg.d_model, G, cfg.n_head));
}

torch::Tensor MaeImpl::head_scale(const torch::Tensor& g) const {
  const double H = static_cast<double>(cfg_.n_head);
  return (1.0 - g) * (H / (H - 1.0));  // [...,H]
}

torch::Tensor MaeImpl::mix(const torch::Tensor& heads, const torch::Tensor& c) {
  auto sizes = heads.sizes().vec();
  auto per_head = sizes;
  per_head.back() = cfg_.n_head;
  per_head.push_back(cfg_.d_head());
  auto scaled = heads.view(per_head) * c.unsqueeze(-1);  // [...,H,Dh]
  return o_->forward(scaled.view(sizes));                // [...,D]
}

torch::Tensor MaeImpl::responsibilities(const torch::Tensor& x) {
  SEQLAB_CHECK(x.dim() == 3 && x.size(2) == cfg_.d_model, "MAE: expected x [B,T,{}], got {}",
               cfg_.d_model, fmt::join(x.sizes().vec(), ","));
  const int64_t T = x.size(1);
  torch::Tensor u;  // [B,T,D] what the gate reads at each position
  if (cfg_.mae_gate == "token") {
    u = x;
  } else if (cfg_.causal) {
    auto n = torch::arange(1, T + 1, x.options()).view({1, T, 1});  // [1,T,1]
    u = x.cumsum(1) / n;                                            // [B,T,D]
  } else {
    u = x.mean(1, true).expand_as(x);  // [B,T,D]
  }
  return gate(u);  // [B,T,H]
}

torch::Tensor MaeImpl::forward(const torch::Tensor& x) {
  auto g = responsibilities(x);                         // [B,T,H] (checks x)
  return mix(heads_->forward_heads(x), head_scale(g));  // [B,T,D]
}

std::unique_ptr<MixerState> MaeImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<MaeState>();
  s->attn = attn_->init_state(batch);
  s->sum = torch::zeros({batch, cfg_.d_model}, state_options());
  s->count = torch::zeros({}, torch::kLong);
  return s;
}

torch::Tensor MaeImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<MaeState>(st, "mae");
  check_step_input(x_t, "MAE");
  SEQLAB_CHECK(s.sum.size(0) == x_t.size(0), "MAE: state batch {} != input batch {}", s.sum.size(0),
               x_t.size(0));
  s.sum = s.sum + x_t.to(s.sum.dtype());  // [B,D]
  s.count.add_(1);
  const double n = static_cast<double>(s.count.item<int64_t>());
  auto u = cfg_.mae_gate == "token" ? x_t : (s.sum / n).to(x_t.dtype());  // [B,D]
  auto g = gate(u);                                                       // [B,H]
  return mix(heads_->step_heads(x_t, *s.attn), head_scale(g));            // [B,D]
}

}  // namespace seqlab
