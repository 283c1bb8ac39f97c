#include "seqlab/train/finetune.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/train/distributed.h"

#include <filesystem>

namespace seqlab {

namespace fs = std::filesystem;

void finetune_configs(const FinetuneRequest& r, ModelConfig& mc, TaskConfig& tc) {
  SEQLAB_CHECK(!r.model.empty(), "--model is required (the model directory to finetune)");
  auto j = read_config_json(r.model);
  const std::string src = (fs::path(r.model) / kConfigFile).string();
  mc = ModelConfig::from_json(j["model"], src);
  nlohmann::json tj = j.contains("task") ? j["task"] : nlohmann::json::object();
  for (auto it = r.task_overrides.begin(); it != r.task_overrides.end(); ++it)
    tj[it.key()] = it.value();
  SEQLAB_CHECK(tj.contains("task"),
               "{} does not say which task it was trained on: pass --task (and its options)", src);
  tc = TaskConfig::from_json(tj, src);
}

TrainOutcome finetune_model_dir(FinetuneRequest r, DataParallel* dp) {
  ModelConfig mc;
  TaskConfig tc;
  if (!dp || dp->root()) {
    try {
      const bool resuming = r.resume && fs::exists(fs::path(r.out) / kConfigFile);
      if (!resuming) {
        finetune_configs(r, mc, tc);
        r.start.init = r.model;
      }
    } catch (const std::exception& e) {
      if (dp) dp->publish_error("configs", e.what());
      throw;
    }
  }
  return train_model(mc, tc, r.train, r.out, r.resume, r.steps_override, 0, r.start, dp);
}

}  // namespace seqlab
