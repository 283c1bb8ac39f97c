#include "seqlab/tasks/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/parity.h"

namespace seqlab {

namespace {
template <class T>
std::unique_ptr<Task> make(const TaskConfig& c) {
  return std::make_unique<T>(c);
}
}  // namespace

const std::vector<TaskEntry>& task_registry() {
  static const std::vector<TaskEntry> r = {
      {"parity", "bit string; tag each position with the parity of the bits so far",
       make<ParityTask>},
  };
  return r;
}

std::unique_ptr<Task> make_task(const TaskConfig& cfg) {
  for (const auto& e : task_registry()) {
    if (e.name != cfg.task) continue;
    auto t = e.make(cfg);
    SEQLAB_CHECK(cfg.min_len >= t->min_length(), "task {}: --min-len {} is below its minimum ({})",
                 cfg.task, cfg.min_len, t->min_length());
    SEQLAB_CHECK(cfg.max_len >= cfg.min_len, "task {}: --max-len {} is below --min-len {}",
                 cfg.task, cfg.max_len, cfg.min_len);
    return t;
  }
  std::string names;
  for (const auto& e : task_registry()) names += (names.empty() ? "" : ", ") + e.name;
  fail("unknown task '{}' (known: {})", cfg.task, names);
}

}  // namespace seqlab
