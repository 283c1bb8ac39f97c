#include "seqlab/model/model_task.h"

#include "seqlab/core/error.h"

namespace seqlab {

std::optional<TaskConfig> model_task(const LoadedModel& m, const std::string& dir) {
  if (!m.sections.contains("task")) return std::nullopt;
  return TaskConfig::from_json(m.sections.at("task"), dir);
}

std::unique_ptr<Tokenizer> model_tokenizer(const LoadedModel& m, const std::string& dir) {
  const auto task = model_task(m, dir);
  if (!task || task->task != "lm") return nullptr;
  auto tok = make_tokenizer(task->tokenizer);
  SEQLAB_CHECK(tok->vocab_size() == m.config.vocab_size,
               "{}: the tokenizer has {} tokens but the model {}", dir, tok->vocab_size(),
               m.config.vocab_size);
  return tok;
}

}  // namespace seqlab
