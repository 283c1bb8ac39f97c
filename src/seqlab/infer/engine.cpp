#include "seqlab/infer/engine.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/mixers/registry.h"

#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace seqlab::infer {

namespace {

constexpr const char* kPendingKey = "pending_token";

class FastEngine : public Engine {
 public:
  FastEngine(SeqModelImpl& model, WeightFormat weights)
      : fm_(model, weights), s_(fm_.init_state()) {}
  std::string name() const override { return "fast"; }
  int64_t vocab_size() const override { return fm_.vocab_size(); }
  int64_t pos() const override { return s_.pos; }
  void prefill(const int64_t* tokens, int64_t n, float* logits) override {
    fm_.prefill(tokens, n, s_, logits);
  }
  void step(int64_t token, float* logits) override { fm_.step(token, s_, logits); }
  int64_t state_bytes() const override {
    return fm_.state_size() * static_cast<int64_t>(sizeof(float));
  }

  void save_state(const std::string& path, int64_t pending) const override {
    save_generation_state(fm_, s_, pending, path);
  }

  int64_t load_state(const std::string& path) override {
    DecoderState s;
    const int64_t pending = load_generation_state(fm_, path, s);
    s_ = std::move(s);
    return pending;
  }

 private:
  FastModel fm_;
  DecoderState s_;
};

class TorchEngine : public Engine {
 public:
  explicit TorchEngine(SeqModelImpl& model) : m_(model), s_(model.init_state(1)) {}
  std::string name() const override { return "torch"; }
  int64_t vocab_size() const override { return m_.config().vocab_size; }
  int64_t pos() const override { return s_.pos; }
  void prefill(const int64_t* tokens, int64_t n, float* logits) override {
    for (int64_t i = 0; i < n; ++i) run(tokens[i], i + 1 == n ? logits : nullptr);
  }
  void step(int64_t token, float* logits) override { run(token, logits); }
  int64_t state_bytes() const override {
    int64_t n = 0;
    for (const auto& l : s_.layers)
      l->for_each([&n](const std::string&, torch::Tensor& t) {
        if (t.defined()) n += t.numel() * static_cast<int64_t>(t.element_size());
      });
    return n;
  }

 private:
  void run(int64_t token, float* logits) {
    torch::NoGradGuard no_grad;
    const int64_t V = m_.config().vocab_size;
    SEQLAB_CHECK(token >= 0 && token < V, "token {} is outside the vocabulary [0, {})", token, V);
    auto out = m_.step(torch::tensor({token}, torch::kLong), s_);  // [1,V]
    if (!logits) return;
    auto c = out.to(torch::kFloat).contiguous();
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + V, logits);
  }
  SeqModelImpl& m_;
  ModelState s_;
};

}  // namespace

void save_generation_state(const FastModel& fm, const DecoderState& s, int64_t pending,
                           const std::string& path) {
  // FastModel writes its own format; the pending token is added to that file's metadata, so
  // FastModel::load_state still reads it.
  const std::string tmp = path + ".partial-" + std::to_string(getpid());
  fm.save_state(tmp, s);
  SafetensorsFile f;
  try {
    f = load_safetensors(tmp);
  } catch (...) {
    std::filesystem::remove(tmp);
    throw;
  }
  std::filesystem::remove(tmp);
  f.metadata[kPendingKey] = std::to_string(pending);
  save_safetensors(path, f.tensors, f.metadata);
}

int64_t load_generation_state(const FastModel& fm, const std::string& path, DecoderState& s) {
  DecoderState loaded = fm.load_state(path);
  const auto meta = load_safetensors(path).metadata;
  int64_t pending = -1;
  if (auto it = meta.find(kPendingKey); it != meta.end()) {
    size_t used = 0;
    try {
      pending = std::stoll(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(
        used == it->second.size() && used > 0 && pending >= -1 && pending < fm.vocab_size(),
        "{}: bad {} '{}'", path, kPendingKey, it->second);
  }
  s = std::move(loaded);
  return pending;
}

void Engine::save_state(const std::string&, int64_t) const {
  fail("--save-state needs --engine fast (the {} engine has no state file)", name());
}

int64_t Engine::load_state(const std::string&) {
  fail("--load-state needs --engine fast (the {} engine has no state file)", name());
}

std::unique_ptr<Engine> make_engine(const std::string& name, SeqModelImpl& model,
                                    WeightFormat weights) {
  const auto& cfg = model.config();
  SEQLAB_CHECK(cfg.head == "lm", "not a language model: its head is '{}', generation needs 'lm'",
               cfg.head);
  SEQLAB_CHECK(cfg.mixer.causal, "not a causal model: a bidirectional mixer cannot generate");
  SEQLAB_CHECK(!model.adapters, "merge the model's adapters before decoding");
  if (name == "fast") {
    const auto why = fast_support(model);
    SEQLAB_CHECK(why.empty(),
                 "the fast engine does not support this model: {} (use --engine torch or auto)",
                 why);
    return std::make_unique<FastEngine>(model, weights);
  }
  SEQLAB_CHECK(weights == WeightFormat::f32,
               "--weights {} needs the fast engine (the torch engine runs the fp32 model)",
               weight_format_name(weights));
  if (name == "torch") return std::make_unique<TorchEngine>(model);
  fail("unknown engine '{}' (engines: fast, torch)", name);
}

EngineChoice choose_engine(const std::string& requested, SeqModelImpl& model) {
  SEQLAB_CHECK(requested == "auto" || requested == "fast" || requested == "torch",
               "--engine must be auto, fast or torch, got '{}'", requested);
  const auto why = fast_support(model);
  if (requested == "torch") return {"torch", "", why};
  if (why.empty()) return {"fast", "", ""};
  SEQLAB_CHECK(requested == "auto",
               "--engine fast: the fast engine does not support this model: {} (use --engine "
               "torch or auto)",
               why);
  return {
      "torch",
      "the fast engine does not support this model (" + why + "); falling back to the torch engine",
      why};
}

int64_t max_sequence(SeqModelImpl& model) {
  const auto& cfg = model.config();
  const bool positions =
      cfg.resolved_pos(model.blocks->ptr<BlockImpl>(0)->mixer->needs_positions()) != "none";
  return positions || arch_entry(cfg.mixer.arch).traits.kv_cache ? cfg.mixer.max_len : -1;
}

}  // namespace seqlab::infer

namespace seqlab::infer {

std::vector<int64_t> generation_inputs(int64_t pending, const std::vector<int64_t>& prompt,
                                       const std::function<int64_t()>& eos, int64_t pos,
                                       int64_t limit, int64_t max_new, bool resumed) {
  std::vector<int64_t> inputs;
  if (pending >= 0) inputs.push_back(pending);
  inputs.insert(inputs.end(), prompt.begin(), prompt.end());
  if (inputs.empty() && pos == 0 && eos) inputs.push_back(eos());  // a new document
  SEQLAB_CHECK(!inputs.empty(), "nothing to continue from: the prompt is empty{}",
               resumed ? " and the state has no pending token" : "");
  const int64_t n_in = static_cast<int64_t>(inputs.size());
  if (limit >= 0) {
    SEQLAB_CHECK(pos + n_in <= limit, "the prompt is {} tokens{} and the model's max context is {}",
                 n_in, pos > 0 ? fmt::format(" after {} in the state", pos) : "", limit);
    SEQLAB_CHECK(pos + n_in + max_new - 1 <= limit,
                 "--max-new {} does not fit: the model's max context is {}, {} tokens are "
                 "taken, so at most {} new tokens fit",
                 max_new, limit, pos + n_in, limit - pos - n_in + 1);
  }
  return inputs;
}

}  // namespace seqlab::infer
