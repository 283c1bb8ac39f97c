// Task registry: name -> (one-line description, factory). `seqlab tasks` prints it.
#pragma once

#include "seqlab/tasks/task.h"

#include <functional>

namespace seqlab {

struct TaskEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Task>(const TaskConfig&)> make;
};

const std::vector<TaskEntry>& task_registry();

// Builds cfg.task; throws seqlab::Error naming the known tasks when it is unknown, or when the
// options are impossible for it.
std::unique_ptr<Task> make_task(const TaskConfig& cfg);

}  // namespace seqlab
