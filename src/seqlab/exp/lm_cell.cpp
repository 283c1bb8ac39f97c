#include "seqlab/exp/lm_cell.h"

#include "seqlab/exp/classify_cell.h"

#include "seqlab/exp/defsent_cell.h"
#include "seqlab/exp/mae_deq_cell.h"
#include "seqlab/exp/objectives_cell.h"

#include "seqlab/convert/convert.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/trainer.h"

#include <chrono>
#include <filesystem>
#include <sstream>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

struct EvalSpec {
  int64_t context = 128, max_tokens = 65536;
};

EvalSpec eval_spec(const nlohmann::json& cell) {
  EvalSpec e;
  if (cell.contains("eval")) {
    e.context = cell["eval"].value("context", e.context);
    e.max_tokens = cell["eval"].value("max_tokens", e.max_tokens);
  }
  return e;
}

const LmTask& as_lm(const Task& t, const std::string& id) {
  auto* lm = dynamic_cast<const LmTask*>(&t);
  SEQLAB_CHECK(lm, "cell {}: an lm cell needs the lm task, got {}", id, t.name());
  return *lm;
}

double perplexity(const std::string& dir, const Task& task, const EvalSpec& e,
                  const std::string& id) {
  auto m = load_model_dir(dir);
  return evaluate_lm(*m.model, as_lm(task, id), Split::valid, e.context, 8, e.max_tokens).ppl;
}

// [[step, eval_ppl], ..] from a run's metrics.jsonl.
nlohmann::json learning_curve(const std::string& dir) {
  nlohmann::json c = nlohmann::json::array();
  const auto path = fs::path(dir) / kMetricsFile;
  if (!fs::exists(path)) return c;
  std::stringstream ss(read_file(path.string()));
  std::string line;
  while (std::getline(ss, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.contains("eval_ppl") && j["eval_ppl"].is_number())
        c.push_back({j["step"], j["eval_ppl"]});
    } catch (const nlohmann::json::exception&) {
    }
  }
  return c;
}

nlohmann::json model_row(const std::string& id, const nlohmann::json& cell,
                         const std::string& model_dir, const TrainOutcome& o, const Task& task,
                         const EvalSpec& e) {
  auto m = load_model_dir(model_dir);
  const auto& mc = m.config;
  auto r = evaluate_lm(*m.model, as_lm(task, id), Split::valid, e.context, 8, e.max_tokens);
  const auto train = TrainConfig::from_json(m.sections["train"], model_dir);
  nlohmann::json row = {{"kind", "lm"},
                        {"cell", id},
                        {"label", cell.value("label", id)},
                        {"init", cell.value("init", "scratch")},
                        {"arch", mc.mixer.arch},
                        {"feature_map", mc.mixer.arch == "linear" ? mc.mixer.feature_map : ""},
                        {"d_model", mc.mixer.d_model},
                        {"n_layer", mc.n_layer},
                        {"ppl", r.ppl},
                        {"nll", r.nll},
                        {"eval_tokens", r.tokens},
                        {"eval_context", e.context},
                        {"parameters", o.parameters},
                        {"trainable", o.trainable},
                        {"steps", train.steps},
                        {"seed", train.seed},
                        {"train_seconds", o.seconds},
                        {"curve", learning_curve(model_dir)}};
  return row;
}

nlohmann::json lm_train(const nlohmann::json& cell, const std::string& run_dir) {
  const auto id = cell.at("id").get<std::string>();
  const auto model_dir = (fs::path(run_dir) / "model").string();
  auto o = train_model(ModelConfig::from_json(cell.at("model"), id),
                       TaskConfig::from_json(cell.at("task"), id),
                       TrainConfig::from_json(cell.at("train"), id), model_dir, /*resume=*/true);
  auto j = read_config_json(model_dir);
  auto task = make_task(TaskConfig::from_json(j["task"], model_dir));
  auto row = model_row(id, cell, model_dir, o, *task, eval_spec(cell));
  row["distill_steps"] = 0;
  row["adapter"] = "none";
  return {{"id", id}, {"rows", {row}}};
}

nlohmann::json lm_finetune(const nlohmann::json& cell, const std::string& run_dir) {
  const auto id = cell.at("id").get<std::string>();
  const fs::path runs = fs::path(run_dir).parent_path();
  std::string init = (runs / cell.at("from").get<std::string>()).string();
  const auto e = eval_spec(cell);
  auto src_json = read_config_json(init);
  SEQLAB_CHECK(src_json.contains("task"), "cell {}: {} has no task section", id, init);
  const auto task_cfg = TaskConfig::from_json(src_json["task"], init);
  auto task = make_task(task_cfg);
  nlohmann::json extra = {{"distill_steps", 0}};
  if (cell.contains("convert")) {
    ConvertConfig cc;
    FromJsonVisitor v{cell["convert"], id, {}};
    cc.visit(v);
    const auto conv_dir = (fs::path(run_dir) / "converted").string();
    if (!fs::exists(fs::path(conv_dir) / kConfigFile)) {
      auto teacher = load_model_dir(init);
      auto student = convert_model(*teacher.model, cc);
      nlohmann::json conv = {{"from", init}, {"config", cc.to_json()}};
      if (cc.distill_steps > 0) {
        const int64_t len = cc.distill_len > 0 ? cc.distill_len : task_cfg.max_len;
        auto rep = distill_attention(*teacher.model, *student, *task, cc, len);
        conv["distill"] = {{"steps", rep.steps},
                           {"length", len},
                           {"loss_before", rep.before},
                           {"loss_after", rep.after},
                           {"seconds", rep.seconds}};
      }
      save_model_dir(conv_dir, *student, {{"convert", conv}, {"task", src_json["task"]}});
    }
    auto conv = read_config_json(conv_dir)["convert"];
    extra["distill_steps"] = cc.distill_steps;
    if (conv.contains("distill")) {
      extra["distill_before"] = conv["distill"]["loss_before"];
      extra["distill_after"] = conv["distill"]["loss_after"];
      extra["distill_seconds"] = conv["distill"]["seconds"];
    }
    extra["ppl_converted"] = perplexity(conv_dir, *task, e, id);
    init = conv_dir;
  }
  StartFrom start;
  start.init = init;
  if (cell.contains("adapter")) start.adapter = AdapterConfig::from_json(cell["adapter"], id);
  const auto model_dir = (fs::path(run_dir) / "model").string();
  auto j = read_config_json(init);
  auto o = train_model(ModelConfig::from_json(j["model"], init), task_cfg,
                       TrainConfig::from_json(cell.at("train"), id), model_dir, /*resume=*/true, 0,
                       0, start);
  auto row = model_row(id, cell, model_dir, o, *task, e);
  row["adapter"] = start.adapter.kind;
  if (start.adapter.kind != "none") {
    row["adapter_rank"] = start.adapter.rank;
    row["adapter_targets"] = start.adapter.targets;
    if (start.adapter.kind == "tied_lora") row["adapter_train"] = start.adapter.train;
  }
  for (auto it = extra.begin(); it != extra.end(); ++it) row[it.key()] = it.value();
  return {{"id", id}, {"rows", {row}}};
}

int64_t state_bytes(const ModelState& s) {
  int64_t n = 0;
  for (const auto& layer : s.layers) {
    if (auto* kv = dynamic_cast<SoftmaxAttentionState*>(layer.get())) {
      // The filled part of the preallocated cache.
      const int64_t len = kv->len.item<int64_t>();
      n += 2 * kv->k.numel() / kv->k.size(2) * len * kv->k.element_size();
      continue;
    }
    auto clone = layer->clone();
    clone->for_each(
        [&](const std::string&, torch::Tensor& t) { n += t.numel() * t.element_size(); });
  }
  return n;
}

// The fast decoder's state in use after `context` tokens: a softmax model's KV cache counts its
// filled part, as state_bytes() does for the LibTorch form.
int64_t fast_state_bytes(const infer::FastModel& fm, const infer::DecoderState& s,
                         int64_t context) {
  const auto& mc = fm.config().mixer;
  if (mc.arch == "softmax")
    return 2 * fm.config().n_layer * context * mc.d_model * static_cast<int64_t>(sizeof(float));
  return static_cast<int64_t>(s.data.size() * sizeof(float));
}

nlohmann::json lm_bench(const nlohmann::json& cell, const std::string& run_dir) {
  const auto id = cell.at("id").get<std::string>();
  const fs::path runs = fs::path(run_dir).parent_path();
  auto contexts = cell.at("contexts").get<std::vector<int64_t>>();
  std::sort(contexts.begin(), contexts.end());
  contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
  SEQLAB_CHECK(!contexts.empty() && contexts.front() >= 2, "cell {}: contexts must be >= 2", id);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : cell.at("models")) {
    const auto dir = (runs / m.at("from").get<std::string>()).string();
    auto lm = load_model_dir(dir);
    SEQLAB_CHECK(contexts.back() <= lm.config.mixer.max_len,
                 "cell {}: context {} is beyond {}'s max context {}", id, contexts.back(), dir,
                 lm.config.mixer.max_len);
    torch::NoGradGuard ng;
    auto gen = make_generator(7);
    auto tokens = torch::randint(0, lm.config.vocab_size, {contexts.back()}, gen, torch::kLong);
    // Both engines over the same tokens: LibTorch's recurrent form (SeqModel::step) and the
    // hand-written fast decoder (infer/fast_model.h).
    for (const char* engine : {"torch", "fast"}) {
      const bool fast = std::string(engine) == "fast";
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
        // Time the last W tokens before each context length (W never reaches back past the
        // previous one).
        const int64_t C = contexts[next], prev = next ? contexts[next - 1] : 0;
        const int64_t W = std::min<int64_t>({64, C / 2, C - prev});
        if (t == C - W) window_start = clock::now();
        if (fast)
          fm->step(tok[t], fstate, logits.data());
        else
          lm.model->step(tokens.narrow(0, t, 1), state);
        if (t + 1 == C) {
          const double s = std::chrono::duration<double>(clock::now() - window_start).count();
          rows.push_back(
              {{"kind", "bench"},
               {"cell", id},
               {"label", m.value("label", dir)},
               {"engine", engine},
               {"arch", lm.config.mixer.arch},
               {"context", C},
               {"window", W},
               {"tokens_per_s", W / s},
               {"state_bytes", fast ? fast_state_bytes(*fm, fstate, C) : state_bytes(state)}});
          ++next;
        }
      }
    }
  }
  return {{"id", id}, {"rows", rows}};
}

}  // namespace

nlohmann::json run_lm_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto kind = cell.at("kind").get<std::string>();
  if (kind == "lm_train") return lm_train(cell, run_dir);
  if (kind == "lm_finetune") return lm_finetune(cell, run_dir);
  if (kind == "lm_bench") return lm_bench(cell, run_dir);
  if (kind.rfind("classify_", 0) == 0) return run_classify_cell(cell, run_dir);
  if (kind == "mae_deq") return run_mae_deq_cell(cell, run_dir);
  if (kind == "objectives") return run_objectives_cell(cell, run_dir);
  if (kind == "defsent") return run_defsent_cell(cell, run_dir);
  fail("cell {}: unknown kind '{}' (lm_train, lm_finetune, lm_bench, mae_deq, defsent, objectives)",
       cell.at("id").dump(), kind);
}

}  // namespace seqlab
