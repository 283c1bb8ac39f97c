#include "seqlab/exp/classify_cell.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/methods/classify_eval.h"
#include "seqlab/train/trainer.h"

#include <filesystem>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

struct Trained {
  LoadedModel lm;
  TaskConfig task;
  uint64_t seed = 0;
  nlohmann::json base;  // fields every row carries
};

Trained train_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const std::string id = cell.at("id").get<std::string>();
  auto model_cfg = ModelConfig::from_json(cell.at("model"), id);
  auto task_cfg = TaskConfig::from_json(cell.at("task"), id);
  auto train_cfg = TrainConfig::from_json(cell.at("train"), id);
  const std::string dir = (fs::path(run_dir) / "model").string();
  // A killed cell resumes from its checkpoint; a finished one is not retrained.
  auto res = train_model(model_cfg, task_cfg, train_cfg, dir, /*resume=*/true);
  Trained t;
  t.lm = load_model_dir(dir);
  t.task = task_cfg;
  t.seed = train_cfg.seed;
  t.base = {{"label", cell.value("label", id)},
            {"task", task_cfg.task},
            {"arch", model_cfg.mixer.arch},
            {"feature_map", model_cfg.mixer.arch == "linear" ? model_cfg.mixer.feature_map : ""},
            {"n_layer", model_cfg.n_layer},
            {"d_model", model_cfg.mixer.d_model},
            {"seed", train_cfg.seed},
            {"steps", res.steps},
            {"train_seconds", res.seconds}};
  return t;
}

nlohmann::json exit_cell(const nlohmann::json& cell, const std::string& run_dir) {
  auto t = train_cell(cell, run_dir);
  auto task = make_task(t.task);
  auto& model = *t.lm.model;
  SEQLAB_CHECK(model.exits, "cell {}: the model has no exits", cell.at("id").dump());
  const int64_t batch = 64;
  auto valid =
      classify_set(*task, Split::valid, t.task.max_len, cell.at("calibrate_n"), batch, t.seed);
  calibrate_exits(model, valid);
  save_model_dir((fs::path(run_dir) / "model").string(), model, t.lm.sections);
  auto test = classify_set(*task, Split::test, t.task.max_len, cell.at("eval_n"), batch, t.seed);
  nlohmann::json rows = nlohmann::json::array();
  const auto cal = exit_calibration(model, test);
  for (size_t j = 0; j < cal.size(); ++j) {
    auto r = t.base;
    r.update({{"kind", "exit_calibration"},
              {"exit", j},
              {"layer", cal[j].layer},
              {"temperature", cal[j].temperature},
              {"accuracy", cal[j].accuracy},
              {"nll_before", cal[j].nll_before},
              {"nll_after", cal[j].nll_after},
              {"ece_before", cal[j].ece_before},
              {"ece_after", cal[j].ece_after}});
    rows.push_back(r);
  }
  for (const auto& p : exit_curve(model, test, cell.at("thresholds").get<std::vector<double>>())) {
    auto r = t.base;
    r.update({{"kind", "exit_curve"},
              {"threshold", p.threshold},
              {"accuracy", p.accuracy},
              {"mean_layers", p.mean_layers},
              {"examples_per_s", p.examples_per_s},
              {"difficulty_rho", p.difficulty_rho},
              {"has_difficulty", test.difficulty.defined()},
              {"exit_share", p.exit_share}});
    rows.push_back(r);
  }
  return {{"id", cell.at("id")}, {"rows", rows}};
}

nlohmann::json swag_cell(const nlohmann::json& cell, const std::string& run_dir) {
  auto t = train_cell(cell, run_dir);
  auto task = make_task(t.task);
  auto& model = *t.lm.model;
  const auto path = (fs::path(run_dir) / "model" / kSwagFile).string();
  auto swag = Swag::from_tensors(load_safetensors(path).tensors, path);
  auto test = classify_set(*task, Split::test, t.task.max_len, cell.at("eval_n"), 64, t.seed);
  const int64_t samples = cell.at("samples");
  const double scale = cell.at("scale");
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& method, const UncertaintyScore& s) {
    auto r = t.base;
    r.update({{"kind", "uncertainty"},
              {"method", method},
              {"accuracy", s.accuracy},
              {"nll", s.nll},
              {"ece", s.ece},
              {"n", s.n},
              {"snapshots", swag.snapshots()},
              {"rank", swag.columns()}});
    if (s.annotators)
      r.update({{"entropy_pearson", s.entropy_pearson},
                {"entropy_spearman", s.entropy_spearman},
                {"kl_annotators", s.kl}});
    rows.push_back(r);
  };
  add("sgd", score_probs(predict_probs(model, test), test));
  add("swa", score_probs(swag_probs(model, swag, test, 1, 0.0, t.seed), test));
  add("swag", score_probs(swag_probs(model, swag, test, samples, scale, t.seed), test));
  return {{"id", cell.at("id")}, {"rows", rows}};
}

}  // namespace

nlohmann::json run_classify_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto kind = cell.at("kind").get<std::string>();
  if (kind == "classify_exit") return exit_cell(cell, run_dir);
  if (kind == "classify_swag") return swag_cell(cell, run_dir);
  fail("cell {}: unknown kind '{}' (classify_exit, classify_swag)", cell.at("id").dump(), kind);
}

}  // namespace seqlab
