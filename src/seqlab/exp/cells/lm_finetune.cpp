// Cell kind lm_finetune (exp/cells/lm.h): convert a model (optionally with attention transfer),
// then finetune it, fully or through adapters, and measure it.
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"

#include <filesystem>

namespace seqlab {

namespace {

namespace fs = std::filesystem;

// Converts `init` into <run_dir>/converted once (a rerun finds it there) and fills the row's
// conversion fields; returns the converted model's directory.
std::string convert_once(const LmFinetuneCellConfig& c, const ConvertConfig& cc,
                         const std::string& init, const nlohmann::json& task_section,
                         const Task& task, int64_t task_max_len, const std::string& run_dir,
                         LmRow& row) {
  const auto conv_dir = (fs::path(run_dir) / "converted").string();
  if (!fs::exists(fs::path(conv_dir) / kConfigFile)) {
    auto teacher = load_model_dir(init);
    auto student = convert_model(*teacher.model, cc);
    nlohmann::json conv = {{"from", init}, {"config", cc.to_json()}};
    if (cc.distill_steps > 0) {
      const int64_t len = cc.distill_len > 0 ? cc.distill_len : task_max_len;
      auto rep = distill_attention(*teacher.model, *student, task, cc, len);
      conv["distill"] = {{"steps", rep.steps},
                         {"length", len},
                         {"loss_before", rep.before},
                         {"loss_after", rep.after},
                         {"seconds", rep.seconds}};
    }
    save_model_dir(conv_dir, *student, {{"convert", conv}, {"task", task_section}});
  }
  const auto conv = read_config_json(conv_dir)["convert"];
  row.distill_steps = cc.distill_steps;
  if (conv.contains("distill")) {
    const auto& d = conv["distill"];
    row.distill_before = d["loss_before"].get<std::vector<double>>();
    row.distill_after = d["loss_after"].get<std::vector<double>>();
    row.distill_seconds = d["seconds"].get<double>();
  }
  row.ppl_converted = lm_perplexity(conv_dir, task, c.eval, c.id);
  return conv_dir;
}

nlohmann::json run_lm_finetune(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<LmFinetuneCellConfig>(cell, cell_source(cell));
  const fs::path runs = fs::path(run_dir).parent_path();
  std::string init = (runs / c.from).string();
  auto src_json = read_config_json(init);
  SEQLAB_CHECK(src_json.contains("task"), "cell {}: {} has no task section", c.id, init);
  auto task_cfg = TaskConfig::from_json(src_json["task"], init);
  resolve_task_tokenizer(task_cfg, init);
  auto task = make_task(task_cfg);
  // The conversion's fields, measured before finetuning; the rest of the row after it.
  LmRow conversion;
  if (c.convert)
    init = convert_once(c, *c.convert, init, task_cfg.to_json(), *task, task_cfg.max_len, run_dir,
                        conversion);
  StartFrom start;
  start.init = init;
  if (c.adapter) start.adapter = *c.adapter;
  if (c.kl) {
    start.teacher = (runs / c.kl->teacher).string();
    start.kl_weight = c.kl->weight;
    start.kl_temperature = c.kl->temperature;
    start.validate();
  }
  const auto model_dir = (fs::path(run_dir) / "model").string();
  auto j = read_config_json(init);
  auto o = train_model(ModelConfig::from_json(j["model"], init), task_cfg, c.train, model_dir,
                       /*resume=*/true, 0, 0, start);
  auto row = lm_model_row(c, model_dir, o, *task);
  row.adapter = start.adapter.kind;
  if (start.adapter.kind != "none") {
    row.adapter_rank = start.adapter.rank;
    row.adapter_targets = start.adapter.targets;
    if (start.adapter.kind == "tied_lora") {
      row.adapter_train = start.adapter.train;
      row.adapter_share = start.adapter.share;
    }
  }
  row.distill_steps = conversion.distill_steps;
  row.distill_before = conversion.distill_before;
  row.distill_after = conversion.distill_after;
  row.distill_seconds = conversion.distill_seconds;
  row.ppl_converted = conversion.ppl_converted;
  if (c.convert && c.convert->distill_steps > 0) {
    // Transfer tokens count too: the converted model saw them (through its teacher).
    const int64_t len = c.convert->distill_len > 0 ? c.convert->distill_len : task_cfg.max_len;
    const int64_t t = c.convert->distill_steps * c.convert->distill_batch * len;
    row.cell_tokens += t;
    row.tokens += t;
  }
  if (c.kl) row.kl_teacher = c.kl->teacher, row.kl_weight = c.kl->weight;
  return {{"id", c.id}, {"rows", lm_split_rows(c, row, model_dir, *task)}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("lm_finetune", 20,
                          "convert a model (optionally with attention transfer), then finetune it",
                          run_lm_finetune, check_spec<LmFinetuneCellConfig>);

}  // namespace seqlab
