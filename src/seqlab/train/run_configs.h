// The trainer's first step (train/trainer.h): the configs a run trains with, resolved and checked
// before anything is written. Internal to train/ (trainer.cpp calls it).
#pragma once

#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <string>

namespace seqlab::detail {

// The configs a run trains with: the command line's, or on --resume the ones saved in `out`;
// then validated and resolved (defaults that depend on the task, the seed, the machine).
// Everything is checked before the first byte is written. Returns the task's vocabulary size.
int64_t resolve_run_configs(const std::string& out, bool resume, bool resuming,
                            int64_t steps_override, ModelConfig& model_cfg, TaskConfig& task_cfg,
                            TrainConfig& train_cfg, StartFrom& start);

}  // namespace seqlab::detail
