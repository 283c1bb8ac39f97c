// Cell kind classify_exit (exp/cells/classify.h): a classifier with early exits, its exits
// temperature-calibrated, then measured per exit and along the early-exit curve.
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/classify.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/methods/classify_eval.h"
#include "seqlab/tasks/registry.h"

#include <filesystem>

namespace seqlab {

namespace {

nlohmann::json run_classify_exit(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<ClassifyExitCellConfig>(cell, cell_source(cell));
  auto t = train_classifier(c.label.value_or(c.id), c.model, c.task, c.train, run_dir);
  auto task = make_task(t.task);
  auto& model = *t.lm.model;
  SEQLAB_CHECK(model.exits, "cell \"{}\": the model has no exits", c.id);
  const int64_t batch = 64;
  auto valid = classify_set(*task, Split::valid, t.task.max_len, c.calibrate_n, batch, t.seed);
  calibrate_exits(model, valid);
  save_model_dir((std::filesystem::path(run_dir) / "model").string(), model, t.lm.sections);
  auto test = classify_set(*task, Split::test, t.task.max_len, c.eval_n, batch, t.seed);
  nlohmann::json rows = nlohmann::json::array();
  const auto cal = exit_calibration(model, test);
  for (size_t j = 0; j < cal.size(); ++j) {
    ExitCalibrationRow r;
    static_cast<ClassifyRowBase&>(r) = t.base;
    r.kind = "exit_calibration";
    r.exit = static_cast<int64_t>(j);
    r.layer = cal[j].layer;
    r.temperature = cal[j].temperature;
    r.accuracy = cal[j].accuracy;
    r.nll_before = cal[j].nll_before;
    r.nll_after = cal[j].nll_after;
    r.ece_before = cal[j].ece_before;
    r.ece_after = cal[j].ece_after;
    rows.push_back(r.to_json());
  }
  for (const auto& p : exit_curve(model, test, c.thresholds)) {
    ExitCurveRow r;
    static_cast<ClassifyRowBase&>(r) = t.base;
    r.kind = "exit_curve";
    r.threshold = p.threshold;
    r.accuracy = p.accuracy;
    r.mean_layers = p.mean_layers;
    r.examples_per_s = p.examples_per_s;
    r.difficulty_rho = p.difficulty_rho;
    r.has_difficulty = test.difficulty.defined();
    r.exit_share = p.exit_share;
    rows.push_back(r.to_json());
  }
  return {{"id", c.id}, {"rows", rows}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("classify_exit", 40,
                          "a classifier with early exits: calibration per exit, early-exit curve",
                          run_classify_exit, check_spec<ClassifyExitCellConfig>);

}  // namespace seqlab
