// Cell kind lm_bench (exp/cells/lm.h): generation speed and state memory of trained models, token
// by token, batch 1, in LibTorch's recurrent form (SeqModel::step) and the fast decoder.
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/exp/cells/state_bytes.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace seqlab {

namespace {

namespace fs = std::filesystem;

// The fast decoder's state in use after `context` tokens: a softmax model's KV cache counts its
// filled part, as model_state_bytes() does for the LibTorch form.
int64_t fast_state_bytes(const infer::FastModel& fm, const infer::DecoderState& s,
                         int64_t context) {
  const auto& mc = fm.config().mixer;
  if (arch_entry(mc.arch).traits.kv_cache)
    return 2 * fm.config().n_layer * context * mc.d_model * static_cast<int64_t>(sizeof(float));
  return static_cast<int64_t>(s.data.size() * sizeof(float));
}

// One engine over `tokens`: a row at each context length, timing the last W tokens before it (W
// never reaches back past the previous length).
void bench_engine(const std::string& id, const std::string& label, const std::string& engine,
                  LoadedModel& lm, const torch::Tensor& tokens,
                  const std::vector<int64_t>& contexts, nlohmann::json& rows) {
  const bool fast = engine == "fast";
  std::unique_ptr<infer::FastModel> fm;
  infer::DecoderState fstate;
  std::vector<float> logits;
  ModelState state;
  if (fast) {
    fm = std::make_unique<infer::FastModel>(*lm.model);
    fstate = fm->init_state();
    logits.resize(fm->vocab_size());
  } else {
    state = lm.model->init_state(1);
  }
  const auto tok = tokens.accessor<int64_t, 1>();
  using clock = std::chrono::steady_clock;
  size_t next = 0;
  auto window_start = clock::now();
  for (int64_t t = 0; t < contexts.back(); ++t) {
    const int64_t C = contexts[next], prev = next ? contexts[next - 1] : 0;
    const int64_t W = std::min<int64_t>({64, C / 2, C - prev});
    if (t == C - W) window_start = clock::now();
    if (fast)
      fm->step(tok[t], fstate, logits.data());
    else
      lm.model->step(tokens.narrow(0, t, 1), state);
    if (t + 1 == C) {
      const double s = std::chrono::duration<double>(clock::now() - window_start).count();
      BenchRow r;
      r.cell = id;
      r.label = label;
      r.engine = engine;
      r.arch = lm.config.mixer.arch;
      r.context = C;
      r.window = W;
      r.tokens_per_s = W / s;
      r.state_bytes = fast ? fast_state_bytes(*fm, fstate, C) : model_state_bytes(state);
      rows.push_back(r.to_json());
      ++next;
    }
  }
}

nlohmann::json run_lm_bench(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<LmBenchCellConfig>(cell, cell_source(cell));
  const fs::path runs = fs::path(run_dir).parent_path();
  auto contexts = c.contexts;
  std::sort(contexts.begin(), contexts.end());
  contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
  SEQLAB_CHECK(!contexts.empty() && contexts.front() >= 2, "cell {}: contexts must be >= 2", c.id);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : c.models) {
    const auto dir = (runs / m.from).string();
    auto lm = load_model_dir(dir);
    SEQLAB_CHECK(contexts.back() <= lm.config.mixer.max_len,
                 "cell {}: context {} is beyond {}'s max context {}", c.id, contexts.back(), dir,
                 lm.config.mixer.max_len);
    torch::NoGradGuard ng;
    auto gen = make_generator(7);
    auto tokens = torch::randint(0, lm.config.vocab_size, {contexts.back()}, gen, torch::kLong);
    // Both engines over the same tokens: LibTorch's recurrent form (SeqModel::step) and the
    // hand-written fast decoder (infer/fast_model.h).
    for (const char* engine : {"torch", "fast"})
      bench_engine(c.id, m.label.value_or(dir), engine, lm, tokens, contexts, rows);
  }
  return {{"id", c.id}, {"rows", rows}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("lm_bench", 30,
                          "generation speed and state memory against context, both engines",
                          run_lm_bench, check_spec<LmBenchCellConfig>);

}  // namespace seqlab
