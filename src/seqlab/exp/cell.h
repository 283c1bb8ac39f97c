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
#include <vector>

namespace seqlab {

// Trains (resuming a checkpoint in run_dir if one is there) and evaluates one cell; returns
// {"id":…, "train_seconds":…, "rows":[…]}. Throws seqlab::Error on a bad cell.
nlohmann::json run_cell(const nlohmann::json& cell, const std::string& run_dir);

// Sets "blind_accuracy" on every row of a plain cell (one without "kind") that lacks it: the
// accuracy of the input-blind predictor (train/evaluate.h, evaluate_blind) on exactly the test
// sequences the row's model was scored on, from the cell's task, eval_size, batch and seed. No
// model is needed, so a report can add it to rows that were measured before it existed. Test
// sets shared by several rows (every architecture of one task, length and seed) are measured
// once. Returns the number of rows it set; rows of a task without such a baseline
// (Task::has_blind_baseline) are left alone, and a cell whose task cannot be built is skipped
// with a warning.
int64_t add_blind_accuracy(const std::vector<nlohmann::json>& cells,
                           std::vector<nlohmann::json>& rows);

}  // namespace seqlab
