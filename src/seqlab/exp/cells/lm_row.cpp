// What lm_train and lm_finetune share (exp/cells/lm.h): the measured row of a model directory.
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/train/evaluate_lm.h"

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

LmRow lm_model_row(const std::string& id, const std::string& label, const std::string& init,
                   const std::string& model_dir, const TrainOutcome& o, const Task& task,
                   const LmEvalConfig& eval) {
  auto m = load_model_dir(model_dir);
  const auto& mc = m.config;
  const int64_t context = lm_eval_context(eval);
  auto r = evaluate_lm(*m.model, as_lm(task, id), Split::valid, context, 8, eval.max_tokens);
  const auto train = TrainConfig::from_json(m.sections["train"], model_dir);
  LmRow row;
  row.cell = id;
  row.label = label;
  row.init = init;
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
  row.seed = train.seed;
  row.train_seconds = o.seconds;
  row.curve = learning_curve(model_dir);
  return row;
}

}  // namespace seqlab
