#include "seqlab/infer/fast_model.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/infer/fast_rope.h"
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
    "arch",       "feature-map",    "d-model",      "n-head",
    "n-kv-head",  "d-state",        "d-feature",    "chunk-size",
    "causal",     "qrnn-window",    "qrnn-pooling", "expand",
    "d-conv",     "max-context",    "init-seed",    "rope",
    "rope-theta", "rope-fraction",  "qkv-bias",     "o-bias",
    "window",     "decay",          "gate",         "n-layer",
    "mlp-ratio",  "activation",     "mlp",          "d-mlp",
    "mlp-bias",   "norm",           "norm-eps",     "parallel-residual",
    "pos",        "tie-embeddings", "vocab-size",   "head",
    "n-classes",  "pooling",        "short-conv"};

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

FastModel::FastModel(SeqModelImpl& model, WeightFormat weights)
    : cfg_(model.config()), format_(weights) {
  const auto why = fast_support(model);
  SEQLAB_CHECK(why.empty(), "the fast decoder does not support this model: {}", why);
  D_ = cfg_.mixer.d_model;
  V_ = cfg_.vocab_size;
  I_ = cfg_.mlp_width();
  rms_ = cfg_.norm == "rms";
  swiglu_ = cfg_.mlp == "swiglu";
  parallel_ = cfg_.parallel_residual;
  pos_ = model.uses_learned_positions()
             ? "learned"
             : cfg_.resolved_pos(model.blocks->ptr<BlockImpl>(0)->mixer->needs_positions());
  auto all = model_tensors(model);
  auto norm_bias = [&](const std::string& name) {
    return rms_ ? std::vector<float>{} : copy_of(all.at(name));
  };
  wte_ = copy_of(all.at("wte.weight"));
  if (pos_ == "learned") wpe_ = copy_of(all.at("wpe.weight"));
  lnf_w_ = copy_of(all.at("ln_f.weight"));
  lnf_b_ = norm_bias("ln_f.bias");
  if (!cfg_.tie_embeddings) head_ = copy_of(all.at("head.weight"));
  if (format_ != WeightFormat::f32) {
    qhead_ = QuantMatrix(head_.empty() ? wte_.data() : head_.data(), V_, D_, format_);
    head_ = std::vector<float>();
  }
  // One set of RoPE tables for every layer (their mixers differ in init_seed only).
  std::shared_ptr<const FastRope> rope;
  if (cfg_.mixer.rope) rope = std::make_shared<FastRope>(cfg_.mixer, cfg_.mixer.max_len);
  int64_t scratch = 0, pscratch = 0;
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    auto sub = [&](const std::string& prefix) {
      TensorMap t;
      for (const auto& [k, v] : all)
        if (k.rfind(p + prefix, 0) == 0) t[k.substr(p.size() + prefix.size())] = v;
      return t;
    };
    Block b;
    b.ln1_w = copy_of(all.at(p + "ln1.weight"));
    b.ln1_b = norm_bias(p + "ln1.bias");
    b.ln2_w = copy_of(all.at(p + "ln2.weight"));
    b.ln2_b = norm_bias(p + "ln2.bias");
    MixerConfig mc = cfg_.mixer;
    mc.init_seed = cfg_.mixer.init_seed + 1000003ULL * static_cast<uint64_t>(l);
    b.mixer = make_fast_mixer(mc, Weights(sub("mixer."), rope, format_));
    b.state_offset = state_size_;
    state_size_ += b.mixer->state_size();
    scratch = std::max(scratch, b.mixer->scratch_size());
    pscratch = std::max(pscratch, b.mixer->prefill_scratch_size(kPrefillChunk));
    if (I_ > 0) {
      Weights mw(sub("mlp."), nullptr, format_);
      if (swiglu_) {
        const Weights mw32(sub("mlp."));  // stacked in fp32, then converted
        const Dense gate(mw32, "gate", I_, D_), up(mw32, "up", I_, D_);
        b.fc1.out = 2 * I_;
        b.fc1.in = D_;
        b.fc1.w = gate.w;
        b.fc1.w.insert(b.fc1.w.end(), up.w.begin(), up.w.end());
        SEQLAB_CHECK(gate.b.empty() == up.b.empty(), "fast decoder: {}mlp: gate and up biases", p);
        b.fc1.b = gate.b;
        b.fc1.b.insert(b.fc1.b.end(), up.b.begin(), up.b.end());
        b.fc1.convert(format_);
        b.fc2 = Dense(mw, "down", D_, I_);
      } else {
        b.fc1 = Dense(mw, "fc1", I_, D_);
        b.fc2 = Dense(mw, "fc2", D_, I_);
      }
    }
    blocks_.push_back(std::move(b));
  }
  const int64_t hidden = swiglu_ ? 2 * I_ : I_;  // fc1's output
  x_.assign(D_, 0);
  h_.assign(D_, 0);
  y_.assign(D_, 0);
  y2_.assign(parallel_ ? D_ : 0, 0);
  mlp_.assign(hidden, 0);
  mix_scratch_.assign(scratch, 0);
  cx_.assign(kPrefillChunk * D_, 0);
  ch_.assign(kPrefillChunk * D_, 0);
  cy_.assign(kPrefillChunk * D_, 0);
  cy2_.assign(parallel_ ? kPrefillChunk * D_ : 0, 0);
  cm_.assign(kPrefillChunk * hidden, 0);
  cscratch_.assign(pscratch, 0);
}

DecoderState FastModel::init_state() const {
  DecoderState s;
  s.data.assign(state_size_, 0.0f);
  for (const auto& b : blocks_) b.mixer->reset(s.data.data() + b.state_offset);
  return s;
}

void FastModel::norm(const float* x, const std::vector<float>& w, const std::vector<float>& b,
                     float* y) const {
  if (rms_)
    rms_norm(x, w.data(), y, D_, cfg_.norm_eps);
  else
    layer_norm(x, w.data(), b.data(), y, D_, cfg_.norm_eps);
}

void FastModel::mlp(const Block& b, const float* H, float* Y, float* M, int64_t n,
                    bool batch) const {
  const int64_t hidden = b.fc1.out;
  if (n == 1)
    b.fc1(H, M);
  else if (batch)
    b.fc1.rows(H, M, n);
  else
    b.fc1.prefill(H, M, n);
  if (swiglu_) {
    // Row i is [gate | up] at M + 2I i; silu(gate) * up goes to M + I i, which ends before any
    // row not read yet, so the rows compact in place into [n, I].
    for (int64_t i = 0; i < n; ++i) silu_mul(M + i * hidden, M + i * hidden + I_, M + i * I_, I_);
  } else if (cfg_.activation == "gelu_tanh") {
    gelu_tanh(M, n * I_);
  } else {
    gelu(M, n * I_);
  }
  if (n == 1)
    b.fc2(M, Y);
  else if (batch)
    b.fc2.rows(M, Y, n);
  else
    b.fc2.prefill(M, Y, n);
}

template <class Mix>
void FastModel::block_with(Block& b, float* X, int64_t n, float* H, float* Y, float* Y2, float* M,
                           bool batch, Mix&& mix) {
  for (int64_t i = 0; i < n; ++i) norm(X + i * D_, b.ln1_w, b.ln1_b, H + i * D_);
  mix(H, Y);
  if (parallel_) {  // x + mixer(ln1 x) + mlp(ln2 x), summed in that order
    for (int64_t i = 0; i < n; ++i) norm(X + i * D_, b.ln2_w, b.ln2_b, H + i * D_);
    mlp(b, H, Y2, M, n, batch);
    axpy(1.0f, Y, X, n * D_);
    axpy(1.0f, Y2, X, n * D_);
    return;
  }
  axpy(1.0f, Y, X, n * D_);
  if (b.fc1.out == 0) return;
  for (int64_t i = 0; i < n; ++i) norm(X + i * D_, b.ln2_w, b.ln2_b, H + i * D_);
  mlp(b, H, Y, M, n, batch);
  axpy(1.0f, Y, X, n * D_);
}

void FastModel::block_rows(Block& b, float* X, int64_t n, float* state, int64_t pos0) {
  // One token runs the mixer's step() and matrix-vector products; a chunk, prefill() and
  // matrix-matrix products.
  if (n == 1) {
    block_with(
        b, X, 1, h_.data(), y_.data(), y2_.data(), mlp_.data(), false,
        [&](const float* H, float* Y) { b.mixer->step(H, Y, state, mix_scratch_.data(), pos0); });
    return;
  }
  block_with(b, X, n, ch_.data(), cy_.data(), cy2_.data(), cm_.data(), false,
             [&](const float* H, float* Y) {
               b.mixer->prefill(H, Y, n, D_, state, cscratch_.data(), pos0);
             });
}

void FastModel::reserve_batch(int64_t B) {
  if (B <= batch_cap_) return;
  const int64_t hidden = swiglu_ ? 2 * I_ : I_;
  int64_t scratch = 0;
  for (const auto& b : blocks_) scratch = std::max(scratch, b.mixer->batch_scratch_size(B));
  bx_.assign(B * D_, 0);
  bh_.assign(B * D_, 0);
  by_.assign(B * D_, 0);
  by2_.assign(parallel_ ? B * D_ : 0, 0);
  bm_.assign(B * hidden, 0);
  bscratch_.assign(scratch, 0);
  bstates_.assign(B, nullptr);
  bpos_.assign(B, 0);
  batch_cap_ = B;
}

void FastModel::step_batch(const int64_t* tokens, DecoderState* const* states, int64_t B,
                           float* logits) {
  SEQLAB_CHECK(B >= 0, "step_batch: {} rows", B);
  if (B == 0) return;
  reserve_batch(B);
  float* X = bx_.data();
  for (int64_t i = 0; i < B; ++i) {
    DecoderState& s = *states[i];
    SEQLAB_CHECK(static_cast<int64_t>(s.data.size()) == state_size_,
                 "decoder state has {} floats, this model needs {}", s.data.size(), state_size_);
    SEQLAB_CHECK(s.pos >= 0 && s.pos < std::numeric_limits<int64_t>::max(),
                 "decoder state position {} cannot advance", s.pos);
    for (int64_t j = 0; j < i; ++j)
      SEQLAB_CHECK(states[j] != states[i], "step_batch: rows {} and {} share a state", j, i);
    embed(tokens[i], s.pos, X + i * D_);
    bpos_[i] = s.pos;
  }
  for (auto& b : blocks_) {
    for (int64_t i = 0; i < B; ++i) bstates_[i] = states[i]->data.data() + b.state_offset;
    block_with(b, X, B, bh_.data(), by_.data(), by2_.data(), bm_.data(), true,
               [&](const float* H, float* Y) {
                 b.mixer->step_batch(H, Y, B, D_, bstates_.data(), bscratch_.data(), bpos_.data());
               });
  }
  for (int64_t i = 0; i < B; ++i) states[i]->pos += 1;
  if (!logits) return;
  for (int64_t i = 0; i < B; ++i) norm(X + i * D_, lnf_w_, lnf_b_, bh_.data() + i * D_);
  head(bh_.data(), logits, B);
}

void FastModel::head(const float* H, float* logits, int64_t n) const {
  if (format_ != WeightFormat::f32)
    quant_matmul(qhead_, nullptr, H, logits, n);
  else
    matmul_rows_blocked(head_.empty() ? wte_.data() : head_.data(), nullptr, H, logits, n, V_, D_);
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
  for (auto& b : blocks_) block_rows(b, x, 1, s.data.data() + b.state_offset, p);
  s.pos = p + 1;
  if (!logits) return;
  norm(x, lnf_w_, lnf_b_, h_.data());
  head(h_.data(), logits, 1);
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
  float* X = cx_.data();
  for (int64_t c0 = 0; c0 < n; c0 += kPrefillChunk) {
    const int64_t c = std::min(kPrefillChunk, n - c0);
    for (int64_t i = 0; i < c; ++i) embed(tokens[c0 + i], s.pos + i, X + i * D_);
    for (auto& b : blocks_) block_rows(b, X, c, s.data.data() + b.state_offset, s.pos);
    s.pos += c;
    if (c0 + c == n && logits) {
      norm(X + (c - 1) * D_, lnf_w_, lnf_b_, h_.data());
      head(h_.data(), logits, 1);
    }
  }
}

int64_t FastModel::packed_size(int64_t pos) const {
  int64_t n = 0;
  for (const auto& b : blocks_) n += b.mixer->packed_size(pos);
  return n;
}

DecoderState FastModel::pack_state(const DecoderState& s) const {
  SEQLAB_CHECK(static_cast<int64_t>(s.data.size()) == state_size_,
               "decoder state has {} floats, this model needs {}", s.data.size(), state_size_);
  DecoderState p;
  p.pos = s.pos;
  p.data.resize(packed_size(s.pos));  // exactly: the session cache counts these bytes
  float* out = p.data.data();
  for (const auto& b : blocks_) {
    b.mixer->pack(s.data.data() + b.state_offset, s.pos, out);
    out += b.mixer->packed_size(s.pos);
  }
  return p;
}

DecoderState FastModel::unpack_state(const DecoderState& packed) const {
  SEQLAB_CHECK(
      packed.pos >= 0 && static_cast<int64_t>(packed.data.size()) == packed_size(packed.pos),
      "packed decoder state has {} floats, this model needs {} at position {}", packed.data.size(),
      packed_size(packed.pos), packed.pos);
  DecoderState s;
  s.pos = packed.pos;
  s.data.resize(state_size_);
  const float* in = packed.data.data();
  for (const auto& b : blocks_) {
    b.mixer->unpack(in, s.pos, s.data.data() + b.state_offset);
    in += b.mixer->packed_size(s.pos);
  }
  return s;
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
