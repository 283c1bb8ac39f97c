// One cell of an experiment grid: train one model on one task with one seed, then evaluate it at
// several test lengths (and, for the saturation experiment, with its recurrent weights scaled).
//
// A cell is plain JSON so that a worker process can run it from a file:
//   {"id": "...", "model": {ModelConfig}, "task": {TaskConfig}, "train": {TrainConfig},
//    "test_lengths": [..], "eval_size": N, "saturation": [1, 4, 16, ...] (optional),
//    "tags": {..}  (copied into every result row, e.g. {"width": 64})}
// Its result is a list of rows, one per (test length[, saturation scale]), each with at least
// task, arch, feature_map, d_model, n_layer, seed, train_length, test_length, accuracy.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

// Trains (resuming a checkpoint in run_dir if one is there) and evaluates one cell; returns
// {"id":…, "train_seconds":…, "rows":[…]}. Throws seqlab::Error on a bad cell.
nlohmann::json run_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
