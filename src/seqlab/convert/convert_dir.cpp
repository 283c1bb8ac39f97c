#include "seqlab/convert/convert_dir.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/hybrid_attention.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/distributed.h"

#include <filesystem>
#include <optional>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

// The teacher and its task: rank 0 reads them from `model` and hands them to the other ranks of
// a data-parallel run (configs through the store, weights by broadcast), so only rank 0 needs
// the directory.
struct Teacher {
  LoadedModel model;
  std::optional<TaskConfig> task;
};

Teacher load_teacher(const std::string& model, const std::string& out, DataParallel* dp) {
  Teacher t;
  if (!dp || dp->root()) {
    try {
      SEQLAB_CHECK(!fs::exists(fs::path(out) / kConfigFile),
                   "{} already holds a model; choose another --out", out);
      t.model = load_model_dir(model);
      // (Checked here as well as by convert_model: the other ranks build the teacher from its
      // config alone, without adapters.)
      SEQLAB_CHECK(!t.model.model->adapters,
                   "convert: merge the model's adapters first (finetune --merge)");
      t.task = model_task(t.model, model);
      if (dp)
        dp->share("teacher", nlohmann::json{{"model", t.model.config.to_json()},
                                            {"task", t.task ? t.task->to_json() : nullptr}}
                                 .dump());
    } catch (const std::exception& e) {
      if (dp) dp->publish_error("teacher", e.what());
      throw;
    }
  } else {
    const auto j = nlohmann::json::parse(dp->share("teacher", ""));
    t.model.config = ModelConfig::from_json(j["model"], "rank 0's teacher");
    t.model.model = SeqModel(t.model.config);
    t.model.model->eval();
    if (!j["task"].is_null()) t.task = TaskConfig::from_json(j["task"], "rank 0's teacher");
  }
  if (dp) {
    std::vector<torch::Tensor> ts;
    for (auto& [k, v] : model_tensors(*t.model.model)) ts.push_back(v);
    dp->broadcast(ts);
  }
  return t;
}

}  // namespace

ConvertOutcome convert_model_dir(const std::string& model, const std::string& out,
                                 const ConvertConfig& cfg, DataParallel* dp) {
  cfg.validate();
  const bool root = !dp || dp->root();
  auto teacher = load_teacher(model, out, dp);
  const auto& teacher_task = teacher.task;
  if (cfg.to == HybridAttentionImpl::kArch && teacher_task)
    SEQLAB_CHECK(cfg.window <= teacher_task->max_len,
                 "--window {} is larger than the context the model was trained on ({} tokens)",
                 cfg.window, teacher_task->max_len);
  auto student = convert_model(*teacher.model.model, cfg);
  ConvertOutcome r;
  r.convert = {{"from", model}, {"config", cfg.to_json()}};
  if (cfg.distill_steps > 0) {
    SEQLAB_CHECK(teacher_task,
                 "{}: attention transfer needs the task the model was trained on (its config.json "
                 "has no \"task\" section)",
                 model);
    const auto& tc = *teacher_task;
    auto task = make_task(tc);
    const int64_t len = cfg.distill_len > 0 ? cfg.distill_len : tc.max_len;
    SEQLAB_CHECK(len <= teacher.model.config.mixer.max_len,
                 "--distill-len {} is longer than the model's max context {}", len,
                 teacher.model.config.mixer.max_len);
    auto rep = distill_attention(*teacher.model.model, *student, *task, cfg, len, dp);
    r.before = rep.before;
    r.after = rep.after;
    r.convert["distill"] = {{"steps", rep.steps},        {"length", len},
                            {"loss_before", rep.before}, {"loss_after", rep.after},
                            {"seconds", rep.seconds},    {"step_seconds", rep.step_seconds}};
    if (dp) r.convert["distill"]["workers"] = dp->world_size();
  }
  r.arch = arch_label(student->config().mixer);
  r.parameters = count_parameters(*student);
  if (!root) return r;  // rank 0 writes the model
  nlohmann::json sections = {{"convert", r.convert}};
  if (teacher_task) sections["task"] = teacher_task->to_json();
  save_model_dir(out, *student, sections);
  r.written = true;
  return r;
}

}  // namespace seqlab
