// The task a model directory was trained for, and the tokenizer that follows from it.
//
// config.json's "task" section (model_dir.h) is a TaskConfig (tasks/task.h) as the trainer saved
// it: seqlab train and finetune write it, import-hf writes it for GPT-2's own vocabulary, and
// seqlab convert carries it over. Code above this layer reads it here, typed, never by key.
#pragma once

#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"
#include "seqlab/text/tokenizer.h"

#include <memory>
#include <optional>
#include <string>

namespace seqlab {

// The model's task section, read and checked (an unknown field or a wrong type is an error naming
// `dir`); nullopt for a model that records none (one no training run wrote).
std::optional<TaskConfig> model_task(const LoadedModel& m, const std::string& dir);
// What model_task does to a task section read from the model directory `dir`: its tokenizer
// "hf" / "bpe" (the files packed into the directory) becomes "hf:<dir>" / "bpe:<dir>".
void resolve_task_tokenizer(TaskConfig& task, const std::string& dir);

// The tokenizer whose ids are the model's vocabulary: its task's, when that task is `lm` (next
// token prediction on text). Null for a model without one (no task section, or a task over its
// own alphabet); the classification tasks over text add padding ids, so their vocabulary is not
// the tokenizer's. Errors name `dir`: an unreadable tokenizer, or one whose vocabulary size is not
// the model's.
std::unique_ptr<Tokenizer> model_tokenizer(const LoadedModel& m, const std::string& dir);

}  // namespace seqlab
