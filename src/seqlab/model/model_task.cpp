#include "seqlab/model/model_task.h"

#include "seqlab/core/error.h"

#include <filesystem>

namespace seqlab {

void resolve_task_tokenizer(TaskConfig& task, const std::string& dir) {
  // "hf": the tokenizer.json that import-hf copied into the model directory itself, wherever
  // that directory now is.
  if (task.tokenizer == "hf")
    task.tokenizer = "hf:" + std::filesystem::absolute(dir).lexically_normal().string();
  // "bpe": the vocab.json + merges.txt that `seqlab pack` copied into the directory itself.
  if (task.tokenizer == "bpe")
    task.tokenizer = "bpe:" + std::filesystem::absolute(dir).lexically_normal().string();
}

std::optional<TaskConfig> model_task(const LoadedModel& m, const std::string& dir) {
  if (!m.sections.contains("task")) return std::nullopt;
  TaskConfig task = TaskConfig::from_json(m.sections.at("task"), dir);
  resolve_task_tokenizer(task, dir);
  return task;
}

std::unique_ptr<Tokenizer> model_tokenizer(const LoadedModel& m, const std::string& dir) {
  const auto task = model_task(m, dir);
  if (!task || task->task != "lm") return nullptr;
  auto tok = make_tokenizer(task->tokenizer);
  // A Hugging Face model's embedding may have more rows than its tokenizer has tokens (Qwen2
  // pads 151665 tokens to 151936 rows); the ids the tokenizer makes must fit.
  const bool hf = task->tokenizer.rfind("hf:", 0) == 0;
  SEQLAB_CHECK(
      hf ? tok->vocab_size() <= m.config.vocab_size : tok->vocab_size() == m.config.vocab_size,
      "{}: the tokenizer has {} tokens but the model {}", dir, tok->vocab_size(),
      m.config.vocab_size);
  return tok;
}

}  // namespace seqlab
