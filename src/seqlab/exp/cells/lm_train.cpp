// Cell kind lm_train (exp/cells/lm.h): train an LM from random initialisation, then measure it.
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"

#include <filesystem>

namespace seqlab {

namespace {

namespace fs = std::filesystem;

nlohmann::json run_lm_train(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<LmTrainCellConfig>(cell, cell_source(cell));
  const auto model_dir = (fs::path(run_dir) / "model").string();
  auto o = train_model(c.model, c.task, c.train, model_dir, /*resume=*/true);
  auto j = read_config_json(model_dir);
  auto task = make_task(TaskConfig::from_json(j["task"], model_dir));
  auto row = lm_model_row(c, model_dir, o, *task);
  row.distill_steps = 0;
  row.adapter = "none";
  return {{"id", c.id}, {"rows", lm_split_rows(c, row, model_dir, *task)}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("lm_train", 10, "train a language model from random initialisation",
                          run_lm_train, check_spec<LmTrainCellConfig>);

}  // namespace seqlab
