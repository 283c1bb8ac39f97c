// Cells of the `objectives` suite (exp/suites/objectives.cpp), kind "objectives": pretrain one
// model with one objective on the synthetic multilingual corpus (methods/objectives.h), then probe
// and finetune it on part-of-speech tagging and sentence classification in every language
// (methods/downstream.h).
//
//   {"id", "kind": "objectives", "config": {ObjectivesConfig}}
//
// One ObjectivesRow per (task, mode, language).
//
// Resumable: the pretrained weights are written atomically to <run_dir>/pretrained.safetensors
// (with the pretraining outcome in its metadata); a cell killed during the downstream stage reruns
// only that stage.
#pragma once

#include "seqlab/exp/cells/fields.h"
#include "seqlab/methods/objectives.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace seqlab {

struct ObjectivesCellConfig : CellSpec {
  ObjectivesConfig config;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(config, "config", kRequired, "objective, model and downstream settings");
  }
  ObjectivesCellConfig() { visit(FieldDefaults{}); }
};

struct ObjectivesRow {
  std::string kind;                 // "objectives"
  std::optional<std::string> cell;  // set by the suite's cell; `seqlab pretrain` has none
  std::string objective, stack, arch;
  std::string task;      // pos | label
  std::string mode;      // probe | finetune
  std::string language;  // L0..L2
  std::string order;     // SVO | SOV | VOS
  double accuracy;
  int64_t n;  // scored words (pos) or sentences (label)
  uint64_t seed;
  int64_t d_model, n_layer, parameters, steps, batch, tokens_per_step;
  int64_t probe_train, ft_train, test_size;  // sentences per language
  double pretrain_first_loss, pretrain_last_loss, pretrain_heldout_loss, pretrain_seconds;
  int64_t train_length, test_length;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("objectives"), "");
    v(cell, "cell", kUnset, "");
    v(objective, "objective", std::string(), "");
    v(stack, "stack", std::string(), "");
    v(arch, "arch", std::string(), "");
    v(task, "task", std::string(), "");
    v(mode, "mode", std::string(), "");
    v(language, "language", std::string(), "");
    v(order, "order", std::string(), "");
    v(accuracy, "accuracy", 0.0, "");
    v(n, "n", int64_t{0}, "");
    v(seed, "seed", uint64_t{0}, "");
    v(d_model, "d_model", int64_t{0}, "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(parameters, "parameters", int64_t{0}, "");
    v(steps, "steps", int64_t{0}, "");
    v(batch, "batch", int64_t{0}, "");
    v(tokens_per_step, "tokens_per_step", int64_t{0}, "");
    v(probe_train, "probe_train", int64_t{0}, "");
    v(ft_train, "ft_train", int64_t{0}, "");
    v(test_size, "test_size", int64_t{0}, "");
    v(pretrain_first_loss, "pretrain_first_loss", 0.0, "");
    v(pretrain_last_loss, "pretrain_last_loss", 0.0, "");
    v(pretrain_heldout_loss, "pretrain_heldout_loss", 0.0, "");
    v(pretrain_seconds, "pretrain_seconds", 0.0, "");
    v(train_length, "train_length", int64_t{0}, "");
    v(test_length, "test_length", int64_t{0}, "");
  }
  ObjectivesRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// Runs one configuration (validated first) in run_dir; returns its rows (ObjectivesRow as JSON,
// without "cell"). `seqlab pretrain` is this function.
nlohmann::json run_objectives(ObjectivesConfig cfg, const std::string& run_dir);

}  // namespace seqlab
