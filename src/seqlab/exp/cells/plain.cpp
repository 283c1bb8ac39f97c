#include "seqlab/exp/cells/plain.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/rng.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/state_bytes.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <utility>

namespace seqlab {

std::optional<double> PlainRow::metric(const std::string& key) const {
  auto it = extra.find(key);
  if (it == extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

nlohmann::json PlainRow::to_json() const {
  auto j = write_fields(*this);
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

PlainRow PlainRow::from_json(const nlohmann::json& j) {
  PlainRow r;
  FieldReader reader{j, "result row", /*strict=*/false, {}};
  r.visit(reader);
  if (!j.contains("train_task")) r.train_task = r.task;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!reader.known.count(it.key())) r.extra[it.key()] = it.value();
  return r;
}

uint64_t plain_valid_seed(uint64_t seed) {
  return mix_seed(seed, 0x7A11D5EEDULL);
}

double lr_from_cells(const std::vector<std::string>& ids, const std::string& suite_dir) {
  namespace fs = std::filesystem;
  SEQLAB_CHECK(!ids.empty(), "lr_from: no cells to choose a learning rate from");
  const fs::path cells = fs::path(suite_dir) / "cells";
  double best = -1, lr = 0;
  std::string chosen;
  for (const auto& id : ids) {
    const auto result = cells / (id + ".result.json");
    SEQLAB_CHECK(fs::exists(result),
                 "lr_from: cell {} has not finished ({} is missing); a cell that chooses its "
                 "learning rate from it must wait for it (\"after\")",
                 id, result.string());
    const auto spec = nlohmann::json::parse(read_file((cells / (id + ".json")).string()));
    double sum = 0;
    int64_t n = 0;
    const auto done = nlohmann::json::parse(read_file(result.string()));
    for (const auto& row : done.at("rows")) {
      const auto r = PlainRow::from_json(row);
      if (!r.is_valid()) continue;
      sum += r.accuracy;
      n += 1;
    }
    SEQLAB_CHECK(n > 0, "lr_from: cell {} has no validation rows (give it a valid_size)", id);
    if (sum / static_cast<double>(n) > best) {
      best = sum / static_cast<double>(n);
      lr = spec.at("train").at("lr").get<double>();
      chosen = id;
    }
  }
  log_info("learning rate {} from cell {} (mean valid accuracy {:.4f})", lr, chosen, best);
  return lr;
}

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

// The row of one evaluation; `extra` gets the task's metrics, then the cell's tags.
PlainRow plain_row(const PlainCellConfig& c, const ModelConfig& mc, const TaskConfig& task_cfg,
                   const TrainConfig& train_cfg, const std::string& test_task, int64_t L,
                   const EvalResult& r, double scale, const char* split) {
  PlainRow row;
  row.task = test_task;
  row.train_task = task_cfg.task;
  row.arch = arch_short_name(mc.mixer);
  row.mixer = mc.mixer.arch;
  row.feature_map = mc.mixer.feature_map;
  row.d_model = mc.mixer.d_model;
  row.n_layer = mc.n_layer;
  row.seed = train_cfg.seed;
  row.steps = train_cfg.steps;
  row.train_length = task_cfg.max_len;
  row.train_min_length = task_cfg.min_len;
  row.test_length = L;
  row.accuracy = r.accuracy;
  row.seq_accuracy = r.seq_accuracy;
  row.loss = r.loss;
  row.n = r.n;
  row.cell = c.id;
  row.lr = train_cfg.lr;
  if (c.valid_size > 0) row.split = split;
  if (scale != 0) row.saturation_scale = scale;
  for (const auto& [k, v] : r.extra) row.extra[k] = v;
  for (auto it = c.tags.begin(); it != c.tags.end(); ++it) row.extra[it.key()] = it.value();
  return row;
}

void check_plain_cell(const nlohmann::json& cell) {
  const auto c = read_spec<PlainCellConfig>(cell, cell_source(cell));
  for (double s : c.saturation)
    SEQLAB_CHECK(s >= 1, "cell {}: saturation scales must be >= 1, got {}", c.id, s);
  if (c.eval_sizes) {
    SEQLAB_CHECK(c.eval_sizes->size() == c.test_lengths.size(),
                 "cell {}: eval_sizes has {} entries for {} test lengths", c.id,
                 c.eval_sizes->size(), c.test_lengths.size());
    for (auto n : *c.eval_sizes)
      SEQLAB_CHECK(n >= 1, "cell {}: eval_sizes entries must be >= 1, got {}", c.id, n);
  }
  SEQLAB_CHECK(c.valid_size >= 0, "cell {}: valid_size must be >= 0, got {}", c.id, c.valid_size);
  SEQLAB_CHECK(c.state_at >= 0, "cell {}: state_at must be >= 0, got {}", c.id, c.state_at);
  for (const auto& id : c.lr_from)
    SEQLAB_CHECK(std::find(c.after.begin(), c.after.end(), id) != c.after.end(),
                 "cell {}: takes its learning rate from {} without waiting for it (\"after\")",
                 c.id, id);
}

}  // namespace

nlohmann::json run_plain_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<PlainCellConfig>(cell, cell_source(cell));
  const std::string& id = c.id;
  auto task_cfg = c.task;
  auto train_cfg = c.train;
  if (!c.lr_from.empty())  // <out>/runs/<id> -> <out>
    train_cfg.lr = lr_from_cells(
        c.lr_from, std::filesystem::path(run_dir).parent_path().parent_path().string());
  auto outcome = train_model(c.model, task_cfg, train_cfg, run_dir, /*resume=*/true);
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
  for (const auto& name : c.tested_tasks()) {
    TaskConfig tc = task_cfg;
    tc.task = name;
    auto t = make_task(tc);
    SEQLAB_CHECK(t->vocab_size() == mc.vocab_size && t->n_classes() == mc.n_classes,
                 "cell {}: test task {} does not fit a model trained on {}", id, name,
                 task_cfg.task);
    tasks.emplace_back(name, std::move(t));
  }
  std::optional<int64_t> state;
  if (c.state_at > 0) {
    loaded.model->eval();
    state = state_bytes_after(*loaded.model,
                              tasks.front().second->sample(1, c.state_at, train_cfg.seed).input);
  }

  nlohmann::json rows = nlohmann::json::array();
  auto add_rows = [&](double scale, bool valid) {
    for (const auto& [test_task, task] : tasks)
      for (size_t i = 0; i < c.test_lengths.size(); ++i) {
        const auto L = c.test_lengths[i];
        auto r = valid ? evaluate(*loaded.model, *task, L, c.valid_size, train_cfg.batch,
                                  plain_valid_seed(train_cfg.seed))
                       : evaluate(*loaded.model, *task, L, c.eval_size_at(i), train_cfg.batch,
                                  train_cfg.seed);
        auto row =
            plain_row(c, mc, task_cfg, train_cfg, test_task, L, r, scale, valid ? "valid" : "test");
        row.state_bytes = state;
        rows.push_back(row.to_json());
      }
  };
  if (c.valid_size > 0) add_rows(0, /*valid=*/true);
  add_rows(0, false);
  double applied = 1;
  for (double s : c.saturation) {
    SEQLAB_CHECK(s >= 1, "cell {}: saturation scales must be >= 1, got {}", id, s);
    if (scale_recurrence(*loaded.model, s / applied) == 0) {
      // Rows equal to the unscaled ones would read as "survives saturation".
      log_info("cell {}: {} has no recurrence weights (w_ih, w_hh) to saturate; no saturation rows",
               id, mc.mixer.arch);
      break;
    }
    applied = s;
    add_rows(s, false);
  }
  return {{"id", id}, {"train_seconds", outcome.seconds}, {"rows", rows}};
}

SEQLAB_REGISTER_CELL_KIND(kPlainCellKind, 0,
                          "train one model on one task, then test it at several lengths (and "
                          "saturated)",
                          run_plain_cell, check_plain_cell);

}  // namespace seqlab
