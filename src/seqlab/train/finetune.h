// `seqlab finetune` as one library call: what the CLI (tools/cmd_convert.cpp) and the Python
// module (python/, seqlab.finetune) both run.
#pragma once

#include "seqlab/train/trainer.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

class DataParallel;

struct FinetuneRequest {
  std::string model, out;  // the model directory to start from, the one to write
  // Task fields given explicitly (JSON keys): they override the model's own task's fields.
  nlohmann::json task_overrides = nlohmann::json::object();
  TrainConfig train;
  int64_t steps_override = 0;  // > 0: --steps was given (raises a resumed run's steps)
  StartFrom start;             // adapters, merge, distillation; init is set to `model`
  bool resume = false;
};

// The model config and task to finetune: `model`'s config.json, its task section with
// task_overrides on top. A seqlab::Error when `model` is empty or names no task and none is given.
void finetune_configs(const FinetuneRequest& r, ModelConfig& mc, TaskConfig& tc);

// Finetunes r.model into r.out (train_model with start.init = r.model). Resuming a run whose
// r.out already holds a model continues it with the configs saved there. With dp set, this process
// is one rank of a data-parallel run: rank 0 reads the configs (an error there reaches the others).
TrainOutcome finetune_model_dir(FinetuneRequest r, DataParallel* dp = nullptr);

}  // namespace seqlab
