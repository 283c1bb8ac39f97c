// Cell kind lm_external (exp/cells/lm.h): a model trained elsewhere, such as the shipped
// teacher (models/teacher-en), copied into the suite's runs so that other cells start from it,
// and measured like a trained cell. Its row's tokens are its own training run's
// (steps x batch x max_len of its "train" and "task" sections) unless base_tokens says more.
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"

#include <filesystem>

namespace seqlab {

namespace {

namespace fs = std::filesystem;

// Copies `src` into `dst` through a temporary directory, so a crash leaves no half copy.
void copy_model_dir(const std::string& src, const std::string& dst) {
  if (fs::exists(fs::path(dst) / kConfigFile)) return;
  const auto tmp = dst + ".partial";
  fs::create_directories(fs::path(dst).parent_path());
  fs::remove_all(tmp);
  fs::copy(src, tmp, fs::copy_options::recursive);
  fs::remove_all(dst);
  fs::rename(tmp, dst);
}

nlohmann::json run_lm_external(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<LmExternalCellConfig>(cell, cell_source(cell));
  SEQLAB_CHECK(fs::exists(fs::path(c.path) / kConfigFile),
               "cell {}: {} is not a model directory (no {}); the path is relative to the "
               "working directory, run the suite from the repository root",
               c.id, c.path, kConfigFile);
  const auto model_dir = (fs::path(run_dir) / "model").string();
  copy_model_dir(c.path, model_dir);
  auto j = read_config_json(model_dir);
  SEQLAB_CHECK(j.contains("task") && j.contains("train"),
               "cell {}: {} has no task or train section (not trained by seqlab train?)", c.id,
               c.path);
  auto task_cfg = TaskConfig::from_json(j["task"], model_dir);
  resolve_task_tokenizer(task_cfg, model_dir);
  auto task = make_task(task_cfg);
  TrainOutcome o;
  o.parameters = count_parameters(*load_model_dir(model_dir).model);
  o.trainable = 0;  // nothing trained in this cell
  auto row = lm_model_row(c, model_dir, o, *task);
  row.adapter = "none";
  return {{"id", c.id}, {"rows", lm_split_rows(c, row, model_dir, *task)}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("lm_external", 25,
                          "measure a model trained elsewhere (copied into the run), such as the "
                          "shipped teacher, so the suite's cells can start from it",
                          run_lm_external, check_spec<LmExternalCellConfig>);

}  // namespace seqlab
