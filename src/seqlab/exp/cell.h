// One cell of an experiment grid, run by a suite's worker process from its spec file.
//
// A cell spec is JSON, so that a worker can run it from a file; its "kind" picks the entry of the
// cell-kind table (exp/cells/kinds.h) that reads it into its typed config and runs it, one file
// per kind under exp/cells/. Without a kind it is the plain grid cell of the synthetic suites
// (exp/cells/plain.h): train one model on one task with one seed, then evaluate it at several test
// lengths, one row per (test length[, saturation scale]) with at least task, arch, feature_map,
// d_model, n_layer, seed, train_length, test_length, accuracy.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace seqlab {

// Trains (resuming a checkpoint in run_dir if one is there) and evaluates one cell of any kind;
// returns {"id":…, "train_seconds":…, "rows":[…]}. Throws seqlab::Error on a bad cell.
nlohmann::json run_cell(const nlohmann::json& cell, const std::string& run_dir);

// Sets "blind_accuracy" on every row of a plain cell (one without "kind") that lacks it: the
// accuracy of the input-blind predictor (train/evaluate.h, evaluate_blind) on exactly the test
// sequences the row's model was scored on, from the cell's task, eval_size, batch and seed (a
// validation row's: valid_size and the validation stream, exp/cells/plain.h). No
// model is needed, so a report can add it to rows that were measured before it existed. Test
// sets shared by several rows (every architecture of one task, length and seed) are measured
// once. Returns the number of rows it set; rows of a task without such a baseline
// (Task::has_blind_baseline) are left alone, and a cell whose task cannot be built is skipped
// with a warning.
int64_t add_blind_accuracy(const std::vector<nlohmann::json>& cells,
                           std::vector<nlohmann::json>& rows);

}  // namespace seqlab
