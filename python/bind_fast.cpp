// seqlab.FastModel(dir): the fast decoder (infer/fast_model.h) with the sampler seqlab generate
// uses (infer/sampler.h): prefill / step / step_batch on FastState objects (clone, save, load),
// and generate (whole text, or a stream as a Python iterator) and generate_batch.
//
// A generation follows `seqlab generate` token for token: the same checks and messages, the
// draw at position p a function of (seed, p) and the logits, and the last sampled token left
// pending in the state (not consumed; infer/engine.h): a later generate on the same state
// consumes it first, and state files are --save-state's, so the CLI's --load-state reads them.
#include "bindings.h"

#include "seqlab/infer/engine.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/sampler.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/text/tokenizer.h"

#include <torch/extension.h>

#include <mutex>
#include <optional>

namespace seqlab::py {

namespace {

using infer::DecoderState;
using infer::FastModel;

struct Fast {
  std::shared_ptr<FastModel> fm;
  std::shared_ptr<Tokenizer> tok;  // null: the model names none
  int64_t limit = -1;              // infer::max_sequence (-1: unbounded)
  std::string dir;
  nlohmann::json config;
  std::mutex mu;  // FastModel's scratch is shared: one call at a time
};

struct FastState {
  std::shared_ptr<FastModel> fm;  // the model it belongs to
  DecoderState s;
  int64_t pending = -1;  // the last sampled token, not consumed yet (-1: none)
};

// weights: "f32" | "bf16" | "int8", or "" for the format the directory stores.
std::shared_ptr<Fast> open(const Path& path, const std::string& weights) {
  const std::string dir = path.string();
  auto lm = on_path(dir, [&] { return load_model_dir(dir); });
  const auto& mc = lm.config;
  SEQLAB_CHECK(mc.head == "lm", "{} is not a language model (its head is '{}'; generate needs lm)",
               dir, mc.head);
  auto f = std::make_shared<Fast>();
  f->tok = model_tokenizer(lm, dir);
  if (lm.model->adapters) lm.model->merge_adapters();
  infer::choose_engine("fast", *lm.model);  // the CLI's error when the fast decoder refuses it
  f->limit = infer::max_sequence(*lm.model);
  f->fm = std::make_shared<FastModel>(*lm.model,
                                      weights.empty() ? lm.weights : parse_weight_format(weights));
  f->dir = dir;
  f->config = mc.to_json();
  return f;
}

std::shared_ptr<FastState> own_state(const Fast& f, const std::shared_ptr<FastState>& st) {
  SEQLAB_CHECK(st && st->fm == f.fm, "the state belongs to another FastModel");
  return st;
}

// A prompt: None, text (str or bytes, encoded with the model's tokenizer) or token ids.
std::vector<int64_t> prompt_ids(const Fast& f, const pyb::object& prompt) {
  if (prompt.is_none()) return {};
  if (pyb::isinstance<pyb::str>(prompt) || pyb::isinstance<pyb::bytes>(prompt)) {
    SEQLAB_CHECK(f.tok, "{} names no tokenizer (its task is not lm): give --prompt-ids", f.dir);
    return f.tok->encode(prompt.cast<std::string>());
  }
  std::vector<int64_t> ids;
  if (THPVariable_Check(prompt.ptr())) {
    auto t = THPVariable_Unpack(prompt.ptr()).to(torch::kLong).contiguous().view(-1);
    ids.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  } else {
    ids = prompt.cast<std::vector<int64_t>>();
  }
  for (const int64_t id : ids)
    SEQLAB_CHECK(id >= 0 && id < f.fm->vocab_size(),
                 "--prompt-ids: '{}' is not a token id in [0, {})", id, f.fm->vocab_size());
  return ids;
}

struct Options {
  int64_t max_tokens = 64;
  infer::SamplerConfig sampler;
  bool stop_at_eos = false;
  void check(const Fast& f) const {
    sampler.validate();
    SEQLAB_CHECK(max_tokens >= 0, "--max-new must be >= 0, got {}", max_tokens);
    SEQLAB_CHECK(f.tok || !stop_at_eos, "--stop-at-eos needs a tokenizer (an lm model)");
  }
};

// The tokens to consume before sampling (a state's pending token, then the prompt), checked as
// seqlab generate checks them.
std::vector<int64_t> generation_inputs(const Fast& f, const FastState& st,
                                       const std::vector<int64_t>& prompt, int64_t max_tokens,
                                       bool resumed) {
  std::function<int64_t()> eos;  // read only for a new document: not every tokenizer has one
  if (f.tok) eos = [&f] { return f.tok->eos_id(); };
  return infer::generation_inputs(st.pending, prompt, eos, st.s.pos, f.limit, max_tokens, resumed);
}

// One generation on one state: consumes the inputs, then samples a token per next() call.
class Generation {
 public:
  Generation(std::shared_ptr<Fast> f, std::shared_ptr<FastState> st, const pyb::object& prompt,
             const Options& o, bool resumed)
      : f_(std::move(f)),
        st_(std::move(st)),
        o_(o),
        sampler_(o.sampler, f_->fm->vocab_size()),
        logits_(f_->fm->vocab_size()) {
    o.check(*f_);
    const auto inputs =
        generation_inputs(*f_, *st_, prompt_ids(*f_, prompt), o.max_tokens, resumed);
    const int64_t n = static_cast<int64_t>(inputs.size());
    pyb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(f_->mu);
    // max_tokens 0 consumes all but the last input, which stays pending.
    f_->fm->prefill(inputs.data(), o.max_tokens == 0 ? n - 1 : n, st_->s,
                    o.max_tokens == 0 ? nullptr : logits_.data());
    st_->pending = inputs.back();
  }

  std::optional<int64_t> next() {
    if (done_ || i_ >= o_.max_tokens) return std::nullopt;
    pyb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(f_->mu);
    const int64_t id = sampler_.sample(logits_.data(), st_->s.pos);
    const bool eos = o_.stop_at_eos && id == f_->tok->eos_id();
    if (i_ + 1 < o_.max_tokens && !eos) f_->fm->step(id, st_->s, logits_.data());
    st_->pending = id;
    ++i_;
    if (eos) done_ = true;
    return eos ? std::nullopt : std::optional<int64_t>(id);
  }

  const Fast& model() const { return *f_; }

 private:
  std::shared_ptr<Fast> f_;
  std::shared_ptr<FastState> st_;
  Options o_;
  infer::Sampler sampler_;
  std::vector<float> logits_;
  int64_t i_ = 0;
  bool done_ = false;
};

// The length of the longest prefix of b that does not end inside a UTF-8 sequence.
size_t utf8_complete(const std::string& b) {
  size_t i = b.size();
  while (i > 0 && b.size() - i < 4 && (static_cast<unsigned char>(b[i - 1]) & 0xC0) == 0x80) --i;
  if (i == 0) return b.size();
  const auto lead = static_cast<unsigned char>(b[i - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return b.size() - (i - 1) < need ? i - 1 : b.size();
}

// generate(stream=True): yields text pieces as the tokens come (a character split across tokens
// is held back until it is whole), or token ids for a model without a tokenizer.
struct Stream {
  std::shared_ptr<Generation> g;
  std::string held;
  bool finished = false;
  pyb::object next() {
    while (!finished) {
      const auto id = g->next();
      if (!id) {
        finished = true;
        break;
      }
      if (!g->model().tok) return pyb::int_(*id);
      held += g->model().tok->decode({*id});
      const size_t n = utf8_complete(held);
      if (n == 0) continue;
      auto piece = decode_text(held.substr(0, n));
      held.erase(0, n);
      return std::move(piece);
    }
    if (held.empty()) throw pyb::stop_iteration();
    auto rest = decode_text(held);
    held.clear();
    return std::move(rest);
  }
};

pyb::object ids_or_text(const Fast& f, const std::vector<int64_t>& ids) {
  if (!f.tok) return pyb::cast(ids);
  return decode_text(f.tok->decode(ids));
}

Options options(int64_t max_tokens, double temperature, int64_t top_k, double top_p, uint64_t seed,
                bool stop_at_eos) {
  Options o;
  o.max_tokens = max_tokens;
  o.sampler.temperature = temperature;
  o.sampler.top_k = top_k;
  o.sampler.top_p = top_p;
  o.sampler.seed = seed;
  o.stop_at_eos = stop_at_eos;
  return o;
}

pyb::object generate(const std::shared_ptr<Fast>& f, const pyb::object& prompt, const Options& o,
                     std::shared_ptr<FastState> state, bool stream, bool ids) {
  const bool resumed = state != nullptr;
  if (!state) state = std::make_shared<FastState>(FastState{f->fm, f->fm->init_state(), -1});
  auto g = std::make_shared<Generation>(f, own_state(*f, state), prompt, o, resumed);
  if (stream) return pyb::cast(Stream{g, std::string(), false});
  std::vector<int64_t> out;
  while (auto id = g->next()) out.push_back(*id);
  return ids ? pyb::cast(out) : ids_or_text(*f, out);
}

// generate_batch: one fresh state per prompt, prefilled one by one, then one step_batch per
// token over the sequences still running (bitwise the same logits as stepping each alone).
pyb::list generate_batch(const std::shared_ptr<Fast>& f, const std::vector<pyb::object>& prompts,
                         const Options& o) {
  o.check(*f);
  const int64_t n = static_cast<int64_t>(prompts.size()), V = f->fm->vocab_size();
  std::vector<FastState> st(n, FastState{f->fm, f->fm->init_state(), -1});
  std::vector<std::vector<int64_t>> inputs(n), out(n);
  for (int64_t r = 0; r < n; ++r)
    inputs[r] = generation_inputs(*f, st[r], prompt_ids(*f, prompts[r]), o.max_tokens, false);
  {
    pyb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(f->mu);
    infer::Sampler sampler(o.sampler, V);
    std::vector<float> logits(n * V), batch_logits(n * V);
    for (int64_t r = 0; r < n; ++r)
      if (o.max_tokens > 0)
        f->fm->prefill(inputs[r].data(), static_cast<int64_t>(inputs[r].size()), st[r].s,
                       logits.data() + r * V);
    std::vector<bool> running(n, true);
    for (int64_t i = 0; i < o.max_tokens; ++i) {
      std::vector<int64_t> rows, tokens;
      std::vector<DecoderState*> states;
      for (int64_t r = 0; r < n; ++r) {
        if (!running[r]) continue;
        const int64_t id = sampler.sample(logits.data() + r * V, st[r].s.pos);
        const bool eos = o.stop_at_eos && id == f->tok->eos_id();
        running[r] = !eos;
        if (eos) continue;
        out[r].push_back(id);
        if (i + 1 < o.max_tokens) {
          rows.push_back(r);
          tokens.push_back(id);
          states.push_back(&st[r].s);
        }
      }
      if (rows.empty()) continue;
      const auto B = static_cast<int64_t>(rows.size());
      f->fm->step_batch(tokens.data(), states.data(), B, batch_logits.data());
      for (int64_t b = 0; b < B; ++b)
        std::copy_n(batch_logits.data() + b * V, V, logits.data() + rows[b] * V);
    }
  }
  pyb::list result;
  for (int64_t r = 0; r < n; ++r) result.append(ids_or_text(*f, out[r]));
  return result;
}

torch::Tensor logits_tensor(const Fast& f, int64_t rows) {
  return rows < 0 ? torch::empty({f.fm->vocab_size()}, torch::kFloat)
                  : torch::empty({rows, f.fm->vocab_size()}, torch::kFloat);
}

torch::Tensor prefill(Fast& f, const pyb::object& tokens, const std::shared_ptr<FastState>& st) {
  own_state(f, st);
  const auto ids = prompt_ids(f, tokens);
  SEQLAB_CHECK(!ids.empty(), "prefill: no tokens");
  auto logits = logits_tensor(f, -1);
  pyb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(f.mu);
  f.fm->prefill(ids.data(), static_cast<int64_t>(ids.size()), st->s, logits.data_ptr<float>());
  return logits;
}

torch::Tensor step(Fast& f, int64_t token, const std::shared_ptr<FastState>& st) {
  own_state(f, st);
  auto logits = logits_tensor(f, -1);
  pyb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(f.mu);
  f.fm->step(token, st->s, logits.data_ptr<float>());
  return logits;
}

torch::Tensor step_batch(Fast& f, const std::vector<int64_t>& tokens,
                         const std::vector<std::shared_ptr<FastState>>& states) {
  SEQLAB_CHECK(tokens.size() == states.size() && !tokens.empty(),
               "step_batch: {} tokens for {} states (one each, at least one)", tokens.size(),
               states.size());
  std::vector<DecoderState*> ptrs;
  for (const auto& s : states) {
    own_state(f, s);
    for (auto* p : ptrs) SEQLAB_CHECK(p != &s->s, "step_batch: a state appears twice");
    ptrs.push_back(&s->s);
  }
  auto logits = logits_tensor(f, static_cast<int64_t>(tokens.size()));
  pyb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(f.mu);
  f.fm->step_batch(tokens.data(), ptrs.data(), static_cast<int64_t>(tokens.size()),
                   logits.data_ptr<float>());
  return logits;
}

void save_state(const FastState& st, const Path& file) {
  const std::string path = file.string();
  // --save-state's checks, with its messages.
  const std::filesystem::path p(path);
  SEQLAB_CHECK(!std::filesystem::is_directory(p), "--save-state {} is a directory", path);
  if (!p.parent_path().empty() && !std::filesystem::is_directory(p.parent_path()))
    throw MissingPath(fmt::format("--save-state {}: directory {} does not exist", path,
                                  p.parent_path().string()));
  pyb::gil_scoped_release release;
  infer::save_generation_state(*st.fm, st.s, st.pending, path);
}

std::shared_ptr<FastState> load_state(const Fast& f, const Path& file) {
  const std::string path = file.string();
  auto st = std::make_shared<FastState>(FastState{f.fm, {}, -1});
  st->pending = on_path(path, [&] { return infer::load_generation_state(*f.fm, path, st->s); });
  return st;
}

// The state's floats as a tensor over the state's own memory (kept alive by the tensor).
torch::Tensor state_data(const std::shared_ptr<FastState>& st) {
  auto keep = st;
  return torch::from_blob(
      st->s.data.data(), {static_cast<int64_t>(st->s.data.size())},
      [keep](void*) mutable { keep.reset(); }, torch::kFloat);
}

}  // namespace

void bind_fast(pyb::module_& m) {
  pyb::class_<FastState, std::shared_ptr<FastState>>(
      m, "FastState", "the fast decoder's whole recurrent state (one float buffer + position)")
      .def_property_readonly("pos", [](const FastState& s) { return s.s.pos; })
      .def_property_readonly(
          "pending",
          [](const FastState& s) -> pyb::object {
            if (s.pending < 0) return pyb::none();
            return pyb::int_(s.pending);
          },
          "the last sampled token, which the next generate consumes first (None: none)")
      .def_property_readonly("data", &state_data, "the state's floats, shared (not copied)")
      .def(
          "clone", [](const FastState& s) { return std::make_shared<FastState>(s); },
          "an independent copy (branch a generation)")
      .def("save", &save_state, pyb::arg("path"),
           "write the state (and pending token) as seqlab generate --save-state does");

  pyb::class_<Fast, std::shared_ptr<Fast>>(
      m, "FastModel", "the fast decoder over a causal lm model directory (seqlab generate's)")
      .def(pyb::init(&open), pyb::arg("dir"), pyb::arg("weights") = "")
      .def_property_readonly(
          "weights", [](const Fast& f) { return weight_format_name(f.fm->weight_format()); })
      .def("init_state",
           [](const Fast& f) {
             return std::make_shared<FastState>(FastState{f.fm, f.fm->init_state(), -1});
           })
      .def("load_state", &load_state, pyb::arg("path"))
      .def("prefill", &prefill, pyb::arg("tokens"), pyb::arg("state"),
           "consume tokens (ids or text); the logits [V] after the last")
      .def("step", &step, pyb::arg("token"), pyb::arg("state"),
           "consume one token; the next-token logits [V]")
      .def("step_batch", &step_batch, pyb::arg("tokens"), pyb::arg("states"),
           "one token for each of B distinct states; logits [B,V]")
      .def(
          "generate",
          [](const std::shared_ptr<Fast>& f, const pyb::object& prompt, int64_t max_tokens,
             double temperature, int64_t top_k, double top_p, uint64_t seed, bool stop_at_eos,
             std::shared_ptr<FastState> state, bool stream) {
            return generate(f, prompt,
                            options(max_tokens, temperature, top_k, top_p, seed, stop_at_eos),
                            std::move(state), stream, false);
          },
          pyb::arg("prompt") = pyb::none(), pyb::arg("max_tokens") = 64,
          pyb::arg("temperature") = 1.0, pyb::arg("top_k") = 0, pyb::arg("top_p") = 1.0,
          pyb::arg("seed") = 0, pyb::arg("stop_at_eos") = false, pyb::arg("state") = pyb::none(),
          pyb::arg("stream") = false,
          "the continuation's text (token ids for a model without a tokenizer); stream=True "
          "gives an iterator over its pieces as they are sampled")
      .def(
          "generate_ids",
          [](const std::shared_ptr<Fast>& f, const pyb::object& prompt, int64_t max_tokens,
             double temperature, int64_t top_k, double top_p, uint64_t seed, bool stop_at_eos,
             std::shared_ptr<FastState> state) {
            return generate(f, prompt,
                            options(max_tokens, temperature, top_k, top_p, seed, stop_at_eos),
                            std::move(state), false, true);
          },
          pyb::arg("prompt") = pyb::none(), pyb::arg("max_tokens") = 64,
          pyb::arg("temperature") = 1.0, pyb::arg("top_k") = 0, pyb::arg("top_p") = 1.0,
          pyb::arg("seed") = 0, pyb::arg("stop_at_eos") = false, pyb::arg("state") = pyb::none(),
          "as generate, the sampled token ids")
      .def(
          "generate_batch",
          [](const std::shared_ptr<Fast>& f, const std::vector<pyb::object>& prompts,
             int64_t max_tokens, double temperature, int64_t top_k, double top_p, uint64_t seed,
             bool stop_at_eos) {
            return generate_batch(
                f, prompts, options(max_tokens, temperature, top_k, top_p, seed, stop_at_eos));
          },
          pyb::arg("prompts"), pyb::arg("max_tokens") = 64, pyb::arg("temperature") = 1.0,
          pyb::arg("top_k") = 0, pyb::arg("top_p") = 1.0, pyb::arg("seed") = 0,
          pyb::arg("stop_at_eos") = false,
          "generate for every prompt at once (one batched step per token); equals generate on "
          "each")
      .def_property_readonly("vocab_size", [](const Fast& f) { return f.fm->vocab_size(); })
      .def_property_readonly("state_size", [](const Fast& f) { return f.fm->state_size(); })
      .def_property_readonly("max_sequence",
                             [](const Fast& f) -> pyb::object {
                               if (f.limit < 0) return pyb::none();
                               return pyb::int_(f.limit);
                             })
      .def_property_readonly("tokenizer", [](const Fast& f) { return f.tok; })
      .def_property_readonly("dir", [](const Fast& f) { return f.dir; })
      .def_property_readonly("config", [](const Fast& f) { return to_python(f.config); });

  pyb::class_<Stream>(m, "Stream", "the pieces of a generation as they are sampled")
      .def("__iter__", [](pyb::object self) { return self; })
      .def("__next__", &Stream::next);
}

}  // namespace seqlab::py
