// Cells of the `objectives` suite (exp/suites/objectives.cpp), kind "objectives": pretrain one
// model with one objective on the synthetic multilingual corpus (methods/objectives.h), then probe
// and finetune it on part-of-speech tagging and sentence classification in every language
// (methods/downstream.h).
//
//   {"id", "kind": "objectives", "config": {ObjectivesConfig}}
//
// Rows, one per (task, mode, language): {kind: "objectives", cell, objective, stack, arch, task
// (pos | label), mode (probe | finetune), language (L0..L2), order (SVO | SOV | VOS), accuracy, n
// (scored words or sentences), seed, d_model, n_layer, parameters, steps, batch,
// tokens_per_step, pretrain_first_loss, pretrain_last_loss, pretrain_heldout_loss,
// pretrain_seconds, train_length, test_length}.
//
// Resumable: the pretrained weights are written atomically to <run_dir>/pretrained.safetensors
// (with the pretraining outcome in its metadata); a cell killed during the downstream stage reruns
// only that stage.
#pragma once

#include "seqlab/methods/objectives.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

// Runs one configuration (validated first) in run_dir; returns its rows.
nlohmann::json run_objectives(ObjectivesConfig cfg, const std::string& run_dir);

nlohmann::json run_objectives_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
