#include "seqlab/exp/cell.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/exp/lm_cell.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/trainer.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

// Multiplies the RNN's gate pre-activations, i.e. the weights and biases of w_ih and w_hh, by
// `scale`: the saturated network of Merrill et al. (2020) is the limit of the recurrence with
// rho * theta as rho grows, where every gate becomes a step function. The output projection o,
// norms, embeddings and heads are left alone. Returns the number of tensors scaled: 0 for mixers
// without w_ih / w_hh (attention, Mamba), whose cells then get no saturation rows at all.
int64_t scale_recurrence(SeqModelImpl& m, double scale) {
  torch::NoGradGuard ng;
  int64_t n = 0;
  for (auto& p : m.named_parameters()) {
    const auto& k = p.key();
    if (k.find(".mixer.w_ih.") != std::string::npos ||
        k.find(".mixer.w_hh.") != std::string::npos) {
      p.value().mul_(scale);
      n += 1;
    }
  }
  return n;
}

}  // namespace

nlohmann::json run_cell(const nlohmann::json& cell, const std::string& run_dir) {
  if (cell.contains("kind")) return run_lm_cell(cell, run_dir);
  const std::string id = cell.at("id").get<std::string>();
  auto model_cfg = ModelConfig::from_json(cell.at("model"), id);
  auto task_cfg = TaskConfig::from_json(cell.at("task"), id);
  auto train_cfg = TrainConfig::from_json(cell.at("train"), id);
  const auto lengths = cell.at("test_lengths").get<std::vector<int64_t>>();
  const int64_t eval_size = cell.value("eval_size", int64_t{256});
  const auto scales = cell.value("saturation", std::vector<double>{});
  const auto tags = cell.value("tags", nlohmann::json::object());
  // Other tasks to test the same model on (e.g. flip_flop_sparse for a flip_flop model).
  const auto test_tasks = cell.value("test_tasks", std::vector<std::string>{task_cfg.task});

  auto outcome = train_model(model_cfg, task_cfg, train_cfg, run_dir, /*resume=*/true);
  // Report what actually ran: the configs as the run directory recorded them (resolved minimum
  // length, thread count, seeds).
  {
    auto j = read_config_json(run_dir);
    task_cfg = TaskConfig::from_json(j["task"], run_dir);
    train_cfg = TrainConfig::from_json(j["train"], run_dir);
  }
  auto loaded = load_model_dir(run_dir);
  const auto& mc = loaded.config;
  std::vector<std::pair<std::string, std::unique_ptr<Task>>> tasks;
  for (const auto& name : test_tasks) {
    TaskConfig tc = task_cfg;
    tc.task = name;
    auto t = make_task(tc);
    SEQLAB_CHECK(t->vocab_size() == mc.vocab_size && t->n_classes() == mc.n_classes,
                 "cell {}: test task {} does not fit a model trained on {}", id, name,
                 task_cfg.task);
    tasks.emplace_back(name, std::move(t));
  }

  nlohmann::json rows = nlohmann::json::array();
  auto add_rows = [&](double scale) {
    for (const auto& [test_task, task] : tasks)
      for (auto L : lengths) {
        auto r = evaluate(*loaded.model, *task, L, eval_size, train_cfg.batch, train_cfg.seed);
        nlohmann::json row = {
            {"task", test_task},
            {"train_task", task_cfg.task},
            {"arch", mc.mixer.arch == "linear" ? mc.mixer.feature_map : mc.mixer.arch},
            {"mixer", mc.mixer.arch},
            {"feature_map", mc.mixer.feature_map},
            {"d_model", mc.mixer.d_model},
            {"n_layer", mc.n_layer},
            {"seed", train_cfg.seed},
            {"steps", train_cfg.steps},
            {"train_length", task_cfg.max_len},
            {"train_min_length", task_cfg.min_len},
            {"test_length", L},
            {"accuracy", r.accuracy},
            {"seq_accuracy", r.seq_accuracy},
            {"loss", r.loss},
            {"n", r.n},
            {"cell", id}};
        if (scale != 0) row["saturation_scale"] = scale;
        for (const auto& [k, v] : r.extra) row[k] = v;
        for (auto it = tags.begin(); it != tags.end(); ++it) row[it.key()] = it.value();
        rows.push_back(row);
      }
  };
  add_rows(0);
  double applied = 1;
  for (double s : scales) {
    SEQLAB_CHECK(s >= 1, "cell {}: saturation scales must be >= 1, got {}", id, s);
    if (scale_recurrence(*loaded.model, s / applied) == 0) {
      // Rows equal to the unscaled ones would read as "survives saturation".
      log_info("cell {}: {} has no recurrence weights (w_ih, w_hh) to saturate; no saturation rows",
               id, mc.mixer.arch);
      break;
    }
    applied = s;
    add_rows(s);
  }
  return {{"id", id}, {"train_seconds", outcome.seconds}, {"rows", rows}};
}

int64_t add_blind_accuracy(const std::vector<nlohmann::json>& cells,
                           std::vector<nlohmann::json>& rows) {
  std::map<std::string, const nlohmann::json*> by_id;
  for (const auto& c : cells)
    if (!c.contains("kind")) by_id[c.at("id").get<std::string>()] = &c;
  // (task config with the row's test task, length, eval size, batch, seed) -> blind accuracy
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t, uint64_t>;
  std::map<Key, std::optional<double>> done;  // nullopt: the task has no such baseline
  std::set<std::string> skipped;
  int64_t set = 0;
  for (auto& row : rows) {
    if (row.contains("blind_accuracy") || !row.contains("cell") || !row.contains("test_length"))
      continue;
    const auto id = row.at("cell").get<std::string>();
    auto it = by_id.find(id);
    if (it == by_id.end() || skipped.count(id)) continue;
    const auto& cell = *it->second;
    try {
      auto tc = TaskConfig::from_json(cell.at("task"), id);
      tc.task = row.value("task", tc.task);
      const auto trc = TrainConfig::from_json(cell.at("train"), id);
      const int64_t n = cell.value("eval_size", int64_t{256});
      const int64_t L = row.at("test_length").get<int64_t>();
      Key k{tc.to_json().dump(), L, n, trc.batch, trc.seed};
      auto hit = done.find(k);
      if (hit == done.end()) {
        auto task = make_task(tc);
        std::optional<double> v;
        if (task->has_blind_baseline())
          v = evaluate_blind(*task, L, n, trc.batch, trc.seed).accuracy;
        hit = done.emplace(k, v).first;
      }
      if (!hit->second) continue;
      row["blind_accuracy"] = *hit->second;
      set += 1;
    } catch (const Error& e) {
      log_warn("cell {}: no input-blind baseline: {}", id, e.what());
      skipped.insert(id);
    }
  }
  return set;
}

}  // namespace seqlab
