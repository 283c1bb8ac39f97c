#include "seqlab/train/run_configs.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/rng.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/checkpoint.h"

#include <filesystem>
#include <thread>

namespace seqlab::detail {

namespace fs = std::filesystem;

int64_t resolve_run_configs(const std::string& out, bool resume, bool resuming,
                            int64_t steps_override, ModelConfig& model_cfg, TaskConfig& task_cfg,
                            TrainConfig& train_cfg, StartFrom& start) {
  if (fs::exists(fs::path(out) / kConfigFile)) {
    // With --resume, the run continues with the configs it was started with. A run killed before
    // its first checkpoint left its initial model and configs but no train state; it starts
    // again from scratch. Any other model directory is never overwritten.
    auto j = read_config_json(out);
    const std::string src = (fs::path(out) / kConfigFile).string();
    SEQLAB_CHECK(resume,
                 "{} already holds a model; pass --resume to continue it or choose another "
                 "--out",
                 out);
    SEQLAB_CHECK(j.contains("task") && j.contains("train"),
                 "{} holds a model that no training run wrote; choose another --out", out);
    model_cfg = ModelConfig::from_json(j["model"], src);
    task_cfg = TaskConfig::from_json(j["task"], src);
    train_cfg = TrainConfig::from_json(j["train"], src);
    start = j.contains("finetune") ? StartFrom::from_json(j["finetune"], src) : StartFrom{};
    if (steps_override > 0) train_cfg.steps = steps_override;
    if (!resuming) log_info("no checkpoint in {} yet: starting from scratch", out);
  } else {
    SEQLAB_CHECK(!resuming, "{}: {} without {}", out, kTrainStateFile, kConfigFile);
  }

  train_cfg.validate();
  auto task = make_task(task_cfg);
  if (task_cfg.min_len == 0) task_cfg.min_len = task->min_length();
  if (train_cfg.threads == 0)
    train_cfg.threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (model_cfg.mixer.init_seed == 0)
    model_cfg.mixer.init_seed = mix_seed(train_cfg.seed, 0x5EEDULL) | 1;
  // A finetuned lm may have more embedding rows than its tokenizer has ids (Pythia pads 50277 to
  // 50304, Qwen2 151665 to 151936): the extra rows stay, never a target.
  const bool padded_lm = !start.init.empty() && model_cfg.head == "lm" && task->head() == "lm" &&
                         model_cfg.vocab_size > task->vocab_size();
  if (!padded_lm) model_cfg.vocab_size = task->vocab_size();
  model_cfg.head = task->head();
  model_cfg.n_classes = task->n_classes();
  SEQLAB_CHECK(!model_cfg.tie_tag_head || model_cfg.head != "lm",
               "--tie-tag-head needs a task with a tag or classify head; {}'s head is lm",
               task->name());
  model_cfg.validate();

  start.adapter.validate();
  SEQLAB_CHECK(start.adapter.kind == "none" || !start.init.empty(),
               "adapters need a model to start from (finetune --model DIR)");
  start.validate();
  return task->vocab_size();
}

}  // namespace seqlab::detail
