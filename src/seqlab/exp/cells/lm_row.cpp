// What lm_train and lm_finetune share (exp/cells/lm.h): the measured row of a model directory.
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/evaluate_positions.h"

#include <filesystem>
#include <sstream>

namespace seqlab {

namespace fs = std::filesystem;

void to_json(nlohmann::json& j, const BenchModelSpec& m) {
  j = write_fields(m);
}

void from_json(const nlohmann::json& j, BenchModelSpec& m) {
  read_fields(j, m, "lm_bench model", /*strict=*/true);
}

void to_json(nlohmann::json& j, const LmKlSpec& k) {
  j = write_fields(k);
}

void from_json(const nlohmann::json& j, LmKlSpec& k) {
  read_fields(j, k, "lm_finetune kl", /*strict=*/true);
}

namespace {

const LmTask& as_lm(const Task& t, const std::string& id) {
  auto* lm = dynamic_cast<const LmTask*>(&t);
  SEQLAB_CHECK(lm, "cell {}: an lm cell needs the lm task, got {}", id, t.name());
  return *lm;
}

// [[step, eval_ppl], ..] from a run's metrics.jsonl.
std::vector<std::pair<int64_t, double>> learning_curve(const std::string& dir) {
  std::vector<std::pair<int64_t, double>> c;
  const auto path = fs::path(dir) / kMetricsFile;
  if (!fs::exists(path)) return c;
  std::stringstream ss(read_file(path.string()));
  std::string line;
  while (std::getline(ss, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.contains("eval_ppl") && j["eval_ppl"].is_number())
        c.emplace_back(j["step"].get<int64_t>(), j["eval_ppl"].get<double>());
    } catch (const nlohmann::json::exception&) {
    }
  }
  return c;
}

}  // namespace

double lm_perplexity(const std::string& dir, const Task& task, const LmEvalConfig& eval,
                     const std::string& id) {
  auto m = load_model_dir(dir);
  return evaluate_lm(*m.model, as_lm(task, id), Split::valid, lm_eval_context(eval), 8,
                     eval.max_tokens)
      .ppl;
}

LmRow lm_model_row(const LmCellSpec& c, const std::string& model_dir, const TrainOutcome& o,
                   const Task& task) {
  const auto& eval = c.eval;
  auto m = load_model_dir(model_dir);
  const auto& mc = m.config;
  const int64_t context = lm_eval_context(eval);
  auto r = evaluate_lm(*m.model, as_lm(task, c.id), Split::valid, context, 8, eval.max_tokens);
  const auto train = TrainConfig::from_json(m.sections["train"], model_dir);
  LmRow row;
  row.cell = c.id;
  row.label = c.label.value_or(c.id);
  row.init = c.init;
  row.method = c.method.empty() ? c.id : c.method;
  row.arch = mc.mixer.arch;
  row.feature_map = feature_map_of(mc.mixer);
  row.d_model = mc.mixer.d_model;
  row.n_layer = mc.n_layer;
  row.ppl = r.ppl;
  row.nll = r.nll;
  row.eval_tokens = r.tokens;
  row.eval_context = context;
  row.parameters = o.parameters;
  row.trainable = o.trainable;
  row.steps = train.steps;
  row.cell_tokens =
      train.steps * train.batch * TaskConfig::from_json(m.sections["task"], model_dir).max_len;
  row.tokens = c.base_tokens + row.cell_tokens;
  row.seed = train.seed;
  row.train_seconds = o.seconds;
  row.curve = learning_curve(model_dir);
  return row;
}

nlohmann::json lm_split_rows(const LmCellSpec& c, const LmRow& valid, const std::string& model_dir,
                             const Task& task) {
  nlohmann::json rows = nlohmann::json::array({valid.to_json()});
  if (!c.eval.test) return rows;
  auto m = load_model_dir(model_dir);
  const auto& lm = as_lm(task, c.id);
  LmRow t = valid;
  t.split = "test";
  t.curve.clear();
  const auto r = evaluate_lm(*m.model, lm, Split::test, valid.eval_context, 8, c.eval.max_tokens);
  t.ppl = r.ppl;
  t.nll = r.nll;
  t.eval_tokens = r.tokens;
  if (c.eval.position_context > 0) {
    t.position_context = c.eval.position_context;
    for (const auto& b : evaluate_lm_positions(*m.model, lm, Split::test, c.eval.position_context,
                                               c.eval.position_bucket, 4, c.eval.max_tokens))
      t.by_position.emplace_back(b.lo, b.ppl);
  }
  rows.push_back(t.to_json());
  return rows;
}

}  // namespace seqlab
