#include "seqlab/infer/fast_model.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace seqlab::infer {

namespace {

// The ModelConfig / MixerConfig fields (flag names) the fast decoder was written for. Any other
// field must hold its default: see fast_support().
const std::set<std::string> kFastFields = {
    "arch",           "feature-map", "d-model",     "n-head",       "d-state",    "d-feature",
    "chunk-size",     "causal",      "qrnn-window", "qrnn-pooling", "expand",     "d-conv",
    "max-context",    "init-seed",   "n-layer",     "mlp-ratio",    "activation", "pos",
    "tie-embeddings", "vocab-size",  "head",        "n-classes",    "pooling"};

// Finds the first field outside kFastFields whose value is not its default.
struct NewFieldVisitor {
  std::string found;
  template <class T, class D>
  void operator()(const T& field, const char* flag, const D& def, const char*) {
    if (!found.empty() || kFastFields.count(flag)) return;
    const nlohmann::json value = field, fallback = static_cast<T>(def);
    if (value != fallback)
      found =
          fmt::format("its config sets {} = {} (the fast decoder implements only the default, {})",
                      json_key(flag), value.dump(), fallback.dump());
  }
};

std::vector<float> copy_of(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

std::string fast_support(const ModelConfig& cfg) {
  if (cfg.head != "lm")
    return fmt::format("its head is '{}' (the fast decoder runs lm heads only)", cfg.head);
  if (!cfg.mixer.causal) return "its mixer is bidirectional (no recurrent form)";
  const auto* arch = find_arch(cfg.mixer.arch);
  if (!arch || !arch->make_fast) return fmt::format("mixer '{}' has no fast form", cfg.mixer.arch);
  if (cfg.activation != "gelu" && cfg.activation != "gelu_tanh")
    return fmt::format("MLP activation '{}' has no fast form", cfg.activation);
  if (cfg.pos != "auto" && cfg.pos != "learned" && cfg.pos != "sinusoidal" && cfg.pos != "none")
    return fmt::format("positions '{}' have no fast form", cfg.pos);
  NewFieldVisitor v;
  ModelConfig copy = cfg;  // visit() is not const
  copy.visit(v);
  return v.found;
}

std::string fast_support(SeqModelImpl& model) {
  auto why = fast_support(model.config());
  if (why.empty() && model.adapters) why = "it has unmerged adapters (merge them first)";
  return why;
}

FastModel::FastModel(SeqModelImpl& model) : cfg_(model.config()) {
  const auto why = fast_support(model);
  SEQLAB_CHECK(why.empty(), "the fast decoder does not support this model: {}", why);
  D_ = cfg_.mixer.d_model;
  V_ = cfg_.vocab_size;
  pos_ = model.uses_learned_positions()
             ? "learned"
             : cfg_.resolved_pos(model.blocks->ptr<BlockImpl>(0)->mixer->needs_positions());
  auto all = model_tensors(model);
  wte_ = copy_of(all.at("wte.weight"));
  if (pos_ == "learned") wpe_ = copy_of(all.at("wpe.weight"));
  lnf_w_ = copy_of(all.at("ln_f.weight"));
  lnf_b_ = copy_of(all.at("ln_f.bias"));
  if (!cfg_.tie_embeddings) head_ = copy_of(all.at("head.weight"));
  int64_t scratch = 0, mlp = 0, pscratch = 0;
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    TensorMap mixer_t;
    for (const auto& [k, v] : all)
      if (k.rfind(p + "mixer.", 0) == 0) mixer_t[k.substr(p.size() + 6)] = v;
    Block b;
    b.ln1_w = copy_of(all.at(p + "ln1.weight"));
    b.ln1_b = copy_of(all.at(p + "ln1.bias"));
    b.ln2_w = copy_of(all.at(p + "ln2.weight"));
    b.ln2_b = copy_of(all.at(p + "ln2.bias"));
    MixerConfig mc = cfg_.mixer;
    mc.init_seed = cfg_.mixer.init_seed + 1000003ULL * static_cast<uint64_t>(l);
    b.mixer = make_fast_mixer(mc, Weights(mixer_t));
    b.state_offset = state_size_;
    state_size_ += b.mixer->state_size();
    scratch = std::max(scratch, b.mixer->scratch_size());
    pscratch = std::max(pscratch, b.mixer->prefill_scratch_size(kPrefillChunk));
    if (cfg_.mlp_ratio > 0) {
      TensorMap mlp_t;
      for (const auto& [k, v] : all)
        if (k.rfind(p + "mlp.", 0) == 0) mlp_t[k.substr(p.size() + 4)] = v;
      const int64_t R = cfg_.mlp_ratio * D_;
      Weights mw(mlp_t);
      b.fc1 = Dense(mw, "fc1", R, D_);
      b.fc2 = Dense(mw, "fc2", D_, R);
      mlp = std::max(mlp, R);
    }
    blocks_.push_back(std::move(b));
  }
  x_.assign(D_, 0);
  h_.assign(D_, 0);
  y_.assign(D_, 0);
  mlp_.assign(mlp, 0);
  mix_scratch_.assign(scratch, 0);
  cx_.assign(kPrefillChunk * D_, 0);
  ch_.assign(kPrefillChunk * D_, 0);
  cy_.assign(kPrefillChunk * D_, 0);
  cm_.assign(kPrefillChunk * mlp, 0);
  cscratch_.assign(pscratch, 0);
}

DecoderState FastModel::init_state() const {
  DecoderState s;
  s.data.assign(state_size_, 0.0f);
  for (const auto& b : blocks_) b.mixer->reset(s.data.data() + b.state_offset);
  return s;
}

void FastModel::step(int64_t token, DecoderState& s, float* logits) {
  SEQLAB_CHECK(static_cast<int64_t>(s.data.size()) == state_size_,
               "decoder state has {} floats, this model needs {}", s.data.size(), state_size_);
  // A loaded state's position can be anything (fuzz/fuzz_state.cpp found pos = 2^63 - 1 + 1).
  SEQLAB_CHECK(s.pos >= 0 && s.pos < std::numeric_limits<int64_t>::max(),
               "decoder state position {} cannot advance", s.pos);
  const int64_t p = s.pos;
  float* x = x_.data();
  embed(token, p, x);
  for (auto& b : blocks_) {
    layer_norm(x, b.ln1_w.data(), b.ln1_b.data(), h_.data(), D_);
    b.mixer->step(h_.data(), y_.data(), s.data.data() + b.state_offset, mix_scratch_.data(), p);
    axpy(1.0f, y_.data(), x, D_);
    if (b.fc1.out == 0) continue;
    layer_norm(x, b.ln2_w.data(), b.ln2_b.data(), h_.data(), D_);
    b.fc1(h_.data(), mlp_.data());
    if (cfg_.activation == "gelu_tanh")
      gelu_tanh(mlp_.data(), b.fc1.out);
    else
      gelu(mlp_.data(), b.fc1.out);
    b.fc2(mlp_.data(), y_.data());
    axpy(1.0f, y_.data(), x, D_);
  }
  s.pos = p + 1;
  if (!logits) return;
  layer_norm(x, lnf_w_.data(), lnf_b_.data(), h_.data(), D_);
  matvec(head_.empty() ? wte_.data() : head_.data(), nullptr, h_.data(), logits, V_, D_);
}

void FastModel::embed(int64_t token, int64_t p, float* x) const {
  SEQLAB_CHECK(token >= 0 && token < V_, "token {} is outside the vocabulary [0, {})", token, V_);
  SEQLAB_CHECK(pos_ == "none" || p < cfg_.mixer.max_len,
               "sequence of {} tokens is longer than this model's max_len ({})", p + 1,
               cfg_.mixer.max_len);
  std::copy(wte_.begin() + token * D_, wte_.begin() + (token + 1) * D_, x);
  if (pos_ == "learned") {
    axpy(1.0f, wpe_.data() + p * D_, x, D_);
  } else if (pos_ == "sinusoidal") {
    // sinusoidal_positions(): sin on even dims, cos on odd, frequency 10000^(-i/D), i even.
    for (int64_t i = 0; i < D_; i += 2) {
      const double a = static_cast<double>(p) * std::exp(i * (-std::log(10000.0) / D_));
      x[i] += static_cast<float>(std::sin(a));
      if (i + 1 < D_) x[i + 1] += static_cast<float>(std::cos(a));
    }
  }
}

void FastModel::prefill(const int64_t* tokens, int64_t n, DecoderState& s, float* logits) {
  SEQLAB_CHECK(static_cast<int64_t>(s.data.size()) == state_size_,
               "decoder state has {} floats, this model needs {}", s.data.size(), state_size_);
  SEQLAB_CHECK(n >= 0 && s.pos >= 0 && n <= std::numeric_limits<int64_t>::max() - s.pos,
               "decoder state position {} cannot advance by {} tokens", s.pos, n);
  // Chunks of kPrefillChunk tokens: every projection and MLP runs as a matrix-matrix product
  // over the chunk's rows; the mixers' recurrences still go token by token.
  float *X = cx_.data(), *H = ch_.data(), *Y = cy_.data(), *M = cm_.data();
  for (int64_t c0 = 0; c0 < n; c0 += kPrefillChunk) {
    const int64_t c = std::min(kPrefillChunk, n - c0);
    for (int64_t i = 0; i < c; ++i) embed(tokens[c0 + i], s.pos + i, X + i * D_);
    for (auto& b : blocks_) {
      for (int64_t i = 0; i < c; ++i)
        layer_norm(X + i * D_, b.ln1_w.data(), b.ln1_b.data(), H + i * D_, D_);
      b.mixer->prefill(H, Y, c, D_, s.data.data() + b.state_offset, cscratch_.data(), s.pos);
      axpy(1.0f, Y, X, c * D_);
      if (b.fc1.out == 0) continue;
      for (int64_t i = 0; i < c; ++i)
        layer_norm(X + i * D_, b.ln2_w.data(), b.ln2_b.data(), H + i * D_, D_);
      matmul_rows(b.fc1.w.data(), b.fc1.b.empty() ? nullptr : b.fc1.b.data(), H, M, c, b.fc1.out,
                  D_);
      if (cfg_.activation == "gelu_tanh")
        gelu_tanh(M, c * b.fc1.out);
      else
        gelu(M, c * b.fc1.out);
      matmul_rows(b.fc2.w.data(), b.fc2.b.empty() ? nullptr : b.fc2.b.data(), M, Y, c, D_,
                  b.fc1.out);
      axpy(1.0f, Y, X, c * D_);
    }
    s.pos += c;
    if (c0 + c == n && logits) {
      layer_norm(X + (c - 1) * D_, lnf_w_.data(), lnf_b_.data(), h_.data(), D_);
      matvec(head_.empty() ? wte_.data() : head_.data(), nullptr, h_.data(), logits, V_, D_);
    }
  }
}

void FastModel::save_state(const std::string& path, const DecoderState& s) const {
  TensorMap t;
  t["state"] = torch::from_blob(const_cast<float*>(s.data.data()),
                                {static_cast<int64_t>(s.data.size())}, torch::kFloat)
                   .clone();
  t["pos"] = torch::tensor({s.pos}, torch::kLong);
  save_safetensors(path, t, {{"format", "seqlab-decoder-state"}, {"model", cfg_.to_json().dump()}});
}

DecoderState FastModel::load_state(const std::string& path) const {
  return state_from(load_safetensors(path), path);
}

DecoderState FastModel::load_state_bytes(std::string_view bytes, const std::string& name) const {
  return state_from(load_safetensors_bytes(bytes, name), name);
}

DecoderState FastModel::state_from(SafetensorsFile&& f, const std::string& path) const {
  SEQLAB_CHECK(f.metadata.count("format") && f.metadata.at("format") == "seqlab-decoder-state",
               "{}: not a seqlab decoder state", path);
  SEQLAB_CHECK(f.metadata.count("model") && f.metadata.at("model") == cfg_.to_json().dump(),
               "{}: the state belongs to a different model", path);
  check_tensor_set(f.tensors, {{"state", {state_size_}}, {"pos", {1}}}, path);
  // item<int64_t>() of a float position would throw c10::Error (or round), not name the file.
  SEQLAB_CHECK(f.tensors.at("state").scalar_type() == torch::kFloat &&
                   f.tensors.at("pos").scalar_type() == torch::kLong,
               "{}: expected \"state\" F32 and \"pos\" I64, got {} and {}", path,
               c10::toString(f.tensors.at("state").scalar_type()),
               c10::toString(f.tensors.at("pos").scalar_type()));
  DecoderState s;
  s.data = copy_of(f.tensors.at("state"));
  s.pos = f.tensors.at("pos").item<int64_t>();
  SEQLAB_CHECK(s.pos >= 0, "{}: negative position", path);
  return s;
}

}  // namespace seqlab::infer
