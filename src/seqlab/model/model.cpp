#include "seqlab/model/model.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/deq.h"

#include <cmath>

namespace seqlab {

MlpImpl::MlpImpl(int64_t d_model, int64_t d_hidden, std::string activation)
    : activation_(std::move(activation)) {
  fc1 = register_module("fc1", torch::nn::Linear(d_model, d_hidden));
  fc2 = register_module("fc2", torch::nn::Linear(d_hidden, d_model));
}

MlpImpl::MlpImpl(const ModelConfig& cfg) : activation_(cfg.activation) {
  const int64_t D = cfg.mixer.d_model, I = cfg.mlp_width();
  using torch::nn::LinearOptions;
  if (cfg.mlp == "swiglu") {
    gate = register_module("gate", torch::nn::Linear(LinearOptions(D, I).bias(cfg.mlp_bias)));
    up = register_module("up", torch::nn::Linear(LinearOptions(D, I).bias(cfg.mlp_bias)));
    down = register_module("down", torch::nn::Linear(LinearOptions(I, D).bias(cfg.mlp_bias)));
    return;
  }
  fc1 = register_module("fc1", torch::nn::Linear(LinearOptions(D, I).bias(cfg.mlp_bias)));
  fc2 = register_module("fc2", torch::nn::Linear(LinearOptions(I, D).bias(cfg.mlp_bias)));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  if (gate) return down(torch::silu(gate(x)) * up(x));  // [...,I] -> [...,D]
  // LibTorch's gelu takes the approximation by name: "none" (erf) or "tanh".
  auto h = torch::gelu(fc1(x), activation_ == "gelu_tanh" ? "tanh" : "none");  // [...,R*D]
  return fc2(h);                                                               // [...,D]
}

BlockImpl::BlockImpl(const ModelConfig& cfg, int64_t index) {
  const int64_t D = cfg.mixer.d_model;
  ln1 = register_module("ln1", Norm(D, cfg.norm, cfg.norm_eps));
  MixerConfig mc = cfg.mixer;
  mc.init_seed = cfg.mixer.init_seed + 1000003ULL * static_cast<uint64_t>(index);
  mixer = register_module("mixer", make_mixer(mc));
  ln2 = register_module("ln2", Norm(D, cfg.norm, cfg.norm_eps));
  if (cfg.mlp_width() > 0) mlp = register_module("mlp", Mlp(cfg));
  parallel = cfg.parallel_residual;
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  if (parallel) return x + mixer->forward(ln1(x)) + mlp(ln2(x));  // [B,T,D]
  auto h = x + mixer->forward(ln1(x));                            // [B,T,D]
  return mlp ? h + mlp(ln2(h)) : h;                               // [B,T,D]
}

torch::Tensor BlockImpl::step(const torch::Tensor& x_t, MixerState& s) {
  if (parallel) return x_t + mixer->step(ln1(x_t), s) + mlp(ln2(x_t));  // [B,D]
  auto h = x_t + mixer->step(ln1(x_t), s);                              // [B,D]
  return mlp ? h + mlp(ln2(h)) : h;                                     // [B,D]
}

ExitHeadImpl::ExitHeadImpl(int64_t d_model, int64_t n_classes) {
  ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  // n_classes 0: a tied head (--tie-tag-head), scored with the token embeddings instead.
  if (n_classes > 0) head = register_module("head", torch::nn::Linear(d_model, n_classes));
}

ModelState ModelState::clone() const {
  ModelState c;
  c.pos = pos;
  for (const auto& l : layers) c.layers.push_back(l->clone());
  return c;
}

torch::Tensor sinusoidal_positions(int64_t p0, int64_t T, int64_t D) {
  auto pos = torch::arange(p0, p0 + T, torch::kFloat32).unsqueeze(1);  // [T,1]
  auto i = torch::arange(0, D, 2, torch::kFloat32);                    // [ceil(D/2)]
  auto freq = torch::exp(i * (-std::log(10000.0) / D));                // [ceil(D/2)]
  auto ang = pos * freq;                                               // [T,ceil(D/2)]
  auto pe = torch::zeros({T, D});
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, D, 2)}, torch::sin(ang));
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, D, 2)},
                torch::cos(ang).narrow(1, 0, D / 2));
  return pe;  // [T,D]
}

SeqModelImpl::SeqModelImpl(ModelConfig cfg) : cfg_(std::move(cfg)) {
  cfg_.validate();
  const int64_t D = cfg_.mixer.d_model;
  wte = register_module("wte", torch::nn::Embedding(cfg_.vocab_size, D));
  torch::nn::init::normal_(wte->weight, 0.0, 0.02);
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < (cfg_.deq.enabled ? 0 : cfg_.n_layer); ++i) {
    block_list_.push_back(Block(cfg_, i));
    blocks->push_back(block_list_.back());
  }
  if (cfg_.deq.enabled) deq = register_module("deq", std::make_shared<DeqImpl>(cfg_));
  pos_ = cfg_.resolved_pos(deq ? deq->mixer->needs_positions()
                               : block_list_.front()->mixer->needs_positions());
  if (pos_ == "learned") {
    wpe = register_module("wpe", torch::nn::Embedding(cfg_.mixer.max_len, D));
    torch::nn::init::normal_(wpe->weight, 0.0, 0.02);
  }
  ln_f = register_module("ln_f", Norm(D, cfg_.norm, cfg_.norm_eps));
  if (cfg_.head == "lm") {
    if (!cfg_.tie_embeddings)
      head = register_module(
          "head", torch::nn::Linear(torch::nn::LinearOptions(D, cfg_.vocab_size).bias(false)));
  } else if (!cfg_.tie_tag_head) {
    head = register_module("head", torch::nn::Linear(D, cfg_.n_classes));
  }
  const auto exit_layers = cfg_.exit_layers();
  if (!exit_layers.empty()) {
    exits = register_module("exits", torch::nn::ModuleList());
    for (size_t j = 0; j + 1 < exit_layers.size(); ++j) {
      exit_list_.push_back(ExitHead(D, cfg_.tie_tag_head ? 0 : cfg_.n_classes));
      exits->push_back(exit_list_.back());
    }
    exit_temperature = register_buffer("exit_temperature",
                                       torch::ones({static_cast<int64_t>(exit_layers.size())}));
  }
}

torch::Tensor SeqModelImpl::embed(const torch::Tensor& tokens, int64_t p0) {
  const int64_t T = tokens.size(1);
  SEQLAB_CHECK(pos_ == "none" || p0 + T <= cfg_.mixer.max_len,
               "sequence of {} tokens is longer than this model's max_len ({})", p0 + T,
               cfg_.mixer.max_len);
  auto x = wte(tokens);  // [B,T,D]
  if (pos_ == "learned")
    x = x + wpe(torch::arange(p0, p0 + T, tokens.options()));  // + [T,D]
  else if (pos_ == "sinusoidal")
    x = x + sinusoidal_positions(p0, T, cfg_.mixer.d_model).to(x.device());  // + [T,D]
  return x;
}

torch::Tensor SeqModelImpl::project(const torch::Tensor& h) {
  if (head) return head(h);                                         // [...,V or C]
  if (cfg_.head == "lm") return torch::matmul(h, wte->weight.t());  // [...,D] x [D,V] -> [...,V]
  return torch::matmul(h, wte->weight.narrow(0, 0, cfg_.n_classes).t());  // tied tag: [...,C]
}

torch::Tensor SeqModelImpl::hidden(const torch::Tensor& tokens) {
  SEQLAB_CHECK(tokens.dim() == 2, "tokens must be [B,T], got {} dims", tokens.dim());
  if (adapters) adapters->apply();
  auto x = embed(tokens, 0);     // [B,T,D]
  if (deq) x = deq->forward(x);  // [B,T,D] the equilibrium
  for (auto& b : block_list_) x = b->forward(x);
  return ln_f(x);  // [B,T,D]
}

std::vector<torch::Tensor> SeqModelImpl::mixer_inputs(const torch::Tensor& tokens) {
  SEQLAB_CHECK(tokens.dim() == 2, "tokens must be [B,T], got {} dims", tokens.dim());
  if (adapters) adapters->apply();
  auto x = embed(tokens, 0);  // [B,T,D]
  std::vector<torch::Tensor> out;
  for (auto& b : block_list_) {
    out.push_back(b->ln1(x));  // [B,T,D]
    x = b->forward(x);
  }
  return out;
}

torch::Tensor SeqModelImpl::pool(const torch::Tensor& h, const torch::Tensor& valid) const {
  if (!valid.defined()) return cfg_.pooling == "mean" ? h.mean(1) : h.select(1, h.size(1) - 1);
  SEQLAB_CHECK(valid.dim() == 2 && valid.size(0) == h.size(0) && valid.size(1) == h.size(1),
               "valid must be [B,T] = [{},{}]", h.size(0), h.size(1));
  auto m = valid.to(h.dtype()).unsqueeze(-1);                                   // [B,T,1]
  if (cfg_.pooling == "mean") return (h * m).sum(1) / m.sum(1).clamp_min(1.0);  // [B,D]
  // The last valid position of each row (padding is at the end).
  auto last = (valid.to(torch::kLong).sum(1) - 1).clamp_min(0);        // [B]
  auto idx = last.view({-1, 1, 1}).expand({h.size(0), 1, h.size(2)});  // [B,1,D]
  return h.gather(1, idx).squeeze(1);                                  // [B,D]
}

torch::Tensor SeqModelImpl::forward(const torch::Tensor& tokens, const torch::Tensor& valid) {
  auto h = hidden(tokens);  // [B,T,D]
  if (cfg_.head != "classify") return project(h);
  return project(pool(h, valid));  // [B,C]
}

torch::Tensor SeqModelImpl::exit_head(size_t j, const torch::Tensor& x,
                                      const torch::Tensor& valid) {
  if (j == exit_list_.size()) return project(pool(ln_f(x), valid));       // the last layer's exit
  auto h = pool(exit_list_[j]->ln(x), valid);                             // [B,D]
  if (exit_list_[j]->head) return exit_list_[j]->head(h);                 // [B,C]
  return torch::matmul(h, wte->weight.narrow(0, 0, cfg_.n_classes).t());  // tied: [B,C]
}

std::vector<torch::Tensor> SeqModelImpl::exit_logits(const torch::Tensor& tokens,
                                                     const torch::Tensor& valid) {
  SEQLAB_CHECK(exits, "this model has no early exits (train it with --exits)");
  SEQLAB_CHECK(tokens.dim() == 2, "tokens must be [B,T], got {} dims", tokens.dim());
  if (adapters) adapters->apply();
  const auto layers = cfg_.exit_layers();
  std::vector<torch::Tensor> out;
  auto x = embed(tokens, 0);  // [B,T,D]
  size_t j = 0;
  for (int64_t l = 1; l <= cfg_.n_layer; ++l) {
    x = block_list_[l - 1]->forward(x);
    if (j < layers.size() && layers[j] == l) out.push_back(exit_head(j++, x, valid));  // [B,C]
  }
  return out;
}

EarlyExitResult SeqModelImpl::classify_early(const torch::Tensor& tokens,
                                             const torch::Tensor& valid, double threshold) {
  SEQLAB_CHECK(exits, "this model has no early exits (train it with --exits)");
  SEQLAB_CHECK(tokens.dim() == 2, "tokens must be [B,T], got {} dims", tokens.dim());
  if (adapters) adapters->apply();
  const auto layers = cfg_.exit_layers();
  const int64_t B = tokens.size(0);
  EarlyExitResult r;
  r.logits = torch::zeros({B, cfg_.n_classes});
  r.probs = torch::zeros({B, cfg_.n_classes});
  r.exit = torch::zeros({B}, torch::kLong);
  r.layers = torch::zeros({B}, torch::kLong);
  auto rows = torch::arange(B, torch::kLong);  // original index of each row still running
  auto x = embed(tokens, 0);                   // [b,T,D], b = rows still running
  auto v = valid;                              // [b,T] or undefined
  size_t j = 0;
  for (int64_t l = 1; l <= cfg_.n_layer && rows.numel() > 0; ++l) {
    x = block_list_[l - 1]->forward(x);
    if (j == layers.size() || layers[j] != l) continue;
    auto logits = exit_head(j, x, v);                                              // [b,C]
    auto probs = torch::softmax(logits / exit_temperature[j].item<double>(), -1);  // [b,C]
    auto stop = std::get<0>(probs.max(-1)).ge(threshold);                          // [b]
    if (l == cfg_.n_layer) stop.fill_(true);
    if (stop.any().item<bool>()) {
      auto idx = rows.masked_select(stop);  // original rows that stop here
      r.logits.index_copy_(0, idx, logits.index({stop}).to(r.logits.dtype()));
      r.probs.index_copy_(0, idx, probs.index({stop}).to(r.probs.dtype()));
      r.exit.index_fill_(0, idx, static_cast<int64_t>(j));
      r.layers.index_fill_(0, idx, l);
      auto keep = stop.logical_not();
      rows = rows.masked_select(keep);
      // Only the sequences still running go on to the next block.
      x = x.index({keep});
      if (v.defined()) v = v.index({keep});
    }
    ++j;
  }
  return r;
}

ModelState SeqModelImpl::init_state(int64_t batch) const {
  ModelState s;
  if (deq) s.layers.push_back(deq->init_state(batch));
  for (const auto& b : block_list_) s.layers.push_back(b->mixer->init_state(batch));
  return s;
}

torch::Tensor SeqModelImpl::step(const torch::Tensor& token, ModelState& s) {
  SEQLAB_CHECK(cfg_.head != "classify", "step() is not defined for a classify head");
  SEQLAB_CHECK(token.dim() == 1, "step() takes one token per sequence: [B], got {} dims",
               token.dim());
  if (adapters) adapters->apply();
  auto x = embed(token.unsqueeze(1), s.pos).squeeze(1);  // [B,D]
  if (deq) x = deq->step(x, *s.layers.front());          // [B,D]
  for (size_t i = 0; i < block_list_.size(); ++i) x = block_list_[i]->step(x, *s.layers[i]);
  s.pos += 1;
  return project(ln_f(x));  // [B,V or C]
}

void SeqModelImpl::attach_adapters(const AdapterConfig& cfg) {
  SEQLAB_CHECK(!adapters, "this model already has adapters attached");
  adapters = register_module("adapters", Adapters(cfg, blocks));
}

void SeqModelImpl::merge_adapters() {
  SEQLAB_CHECK(adapters, "no adapters to merge");
  adapters->merge();
  unregister_module("adapters");
  adapters = nullptr;
}

int64_t count_parameters(const torch::nn::Module& m, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

}  // namespace seqlab
