// The plain grid cell of the synthetic suites (hierarchy, separations, chomsky, recall): a spec
// without "kind". Train one model on one task with one seed, then evaluate it at several test
// lengths, on the training task and optionally others, and (the saturation experiment) with its
// recurrence weights scaled.
//
//   {"id", "model": {ModelConfig}, "task": {TaskConfig}, "train": {TrainConfig},
//    "test_lengths": [..], "eval_size": N, "eval_sizes": [N per length] (optional),
//    "saturation": [2, 8, ..] (optional),
//    "test_tasks": [..] (optional; default the training task), "tags": {..} (copied into every
//    row, e.g. {"width": 64}), "after": [..] (optional),
//    "valid_size": N (optional), "lr_from": [ids] (optional), "state_at": T (optional)}
//
// One PlainRow per (test task, test length[, saturation scale]); with valid_size, one more per
// (test task, test length) on the validation stream, and every row says its split.
//
// Choosing a setting on validation data (issue 36, MQAR's learning-rate sweep as Zoology does
// it): cells that differ only in their learning rate score a validation stream (valid_size > 0,
// drawn with plain_valid_seed, disjoint from the test stream); a cell with "lr_from" names them
// (they must be in its "after"), and trains at the learning rate of the one whose valid rows
// have the highest mean accuracy (the first of the list on a tie). It reads their specs and
// results from the suite directory that holds its own run directory (<out>/runs/<id>, so
// <out>/cells/<id>.json and .result.json). Its own "train" lr is a placeholder.
#pragma once

#include "seqlab/exp/cells/fields.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace seqlab {

struct PlainCellConfig : CellSpec {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  std::vector<int64_t> test_lengths;
  int64_t eval_size = 0;
  std::optional<std::vector<int64_t>> eval_sizes;
  std::vector<double> saturation;
  std::optional<std::vector<std::string>> test_tasks;
  nlohmann::json tags;
  int64_t valid_size = 0;
  std::vector<std::string> lr_from;
  int64_t state_at = 0;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(model, "model", kRequired, "the model");
    v(task, "task", kRequired, "the training task");
    v(train, "train", kRequired, "the training run");
    v(test_lengths, "test_lengths", kRequired, "lengths to evaluate at");
    v(eval_size, "eval_size", int64_t{256}, "test sequences per (task, length)");
    v(eval_sizes, "eval_sizes", kUnset,
      "test sequences per length, one per test_lengths entry (overrides eval_size)");
    v(saturation, "saturation", std::vector<double>{},
      "after the plain rows, scale w_ih and w_hh to each of these factors (>= 1, increasing)");
    v(test_tasks, "test_tasks", kUnset,
      "tasks to test the model on (same vocabulary and classes); default the training task");
    v(tags, "tags", nlohmann::json::object(), "copied into every row");
    v(valid_size, "valid_size", int64_t{0},
      "> 0: also score this many sequences per (task, length) on the validation stream");
    v(lr_from, "lr_from", std::vector<std::string>{},
      "cells (in \"after\") to take the learning rate from: the best mean valid accuracy");
    v(state_at, "state_at", int64_t{0},
      "> 0: record state_bytes, the model's recurrent state per sequence after this many tokens");
  }
  PlainCellConfig() { visit(FieldDefaults{}); }

  // Test sequences at the i-th test length.
  int64_t eval_size_at(size_t i) const { return eval_sizes ? eval_sizes->at(i) : eval_size; }
  // The tasks the model is tested on.
  std::vector<std::string> tested_tasks() const {
    return test_tasks ? *test_tasks : std::vector<std::string>{task.task};
  }
};

struct PlainRow {
  std::string task, train_task;  // test task, training task
  std::string arch;              // the feature map for linear attention, else the mixer
  std::string mixer, feature_map;
  int64_t d_model, n_layer;
  uint64_t seed;
  int64_t steps, train_length, train_min_length, test_length;
  double accuracy, seq_accuracy, loss;
  int64_t n;
  std::string cell;
  double lr;  // the learning rate it trained at (0 in rows measured before it was recorded)
  // "valid" or "test" in cells with a validation stream (valid_size); unset (test) otherwise.
  std::optional<std::string> split;
  // Bytes of recurrent state per sequence after state_at tokens (exp/cells/state_bytes.h; cells
  // with state_at only).
  std::optional<int64_t> state_bytes;
  std::optional<double> saturation_scale;  // set on the saturated rows only
  // Accuracy of the input-blind predictor on the same test set (exp/cell.h add_blind_accuracy);
  // absent for tasks without one and for rows measured before it existed.
  std::optional<double> blind_accuracy;
  // The task's own metrics (EvalResult::extra, e.g. anbn's "accepted", dyck_bounded's
  // "<kind>_share" / "<kind>_right") and the cell's tags: every other key of the row.
  nlohmann::json extra = nlohmann::json::object();

  template <class V>
  void visit(V&& v) {
    v(task, "task", std::string(), "");
    v(train_task, "train_task", std::string(), "");
    v(arch, "arch", std::string(), "");
    v(mixer, "mixer", std::string(), "");
    v(feature_map, "feature_map", std::string(), "");
    v(d_model, "d_model", int64_t{0}, "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(seed, "seed", uint64_t{0}, "");
    v(steps, "steps", int64_t{0}, "");
    v(train_length, "train_length", int64_t{0}, "");
    v(train_min_length, "train_min_length", int64_t{0}, "");
    v(test_length, "test_length", int64_t{0}, "");
    v(accuracy, "accuracy", 0.0, "");
    v(seq_accuracy, "seq_accuracy", 0.0, "");
    v(loss, "loss", 0.0, "");
    v(n, "n", int64_t{0}, "");
    v(cell, "cell", std::string(), "");
    v(lr, "lr", 0.0, "");
    v(split, "split", kUnset, "");
    v(state_bytes, "state_bytes", kUnset, "");
    v(saturation_scale, "saturation_scale", kUnset, "");
    v(blind_accuracy, "blind_accuracy", kUnset, "");
  }
  PlainRow() { visit(FieldDefaults{}); }

  // Scale of a saturated row, 0 for a plain one.
  double scale() const { return saturation_scale.value_or(0.0); }
  // Whether the row scores the validation stream (settings are chosen on those, never reported).
  bool is_valid() const { return split && *split == "valid"; }
  // A task metric of `extra`, if the row has it as a number.
  std::optional<double> metric(const std::string& key) const;

  nlohmann::json to_json() const;
  // Lenient (reports read results.jsonl files of every age): a row without train_task was trained
  // on its test task; keys not in the field list go to extra.
  static PlainRow from_json(const nlohmann::json& j);
};

// The seed of a plain cell's validation stream: evaluate(..., plain_valid_seed(seed)) draws other
// sequences than evaluate(..., seed), the test stream, and than the training batches.
uint64_t plain_valid_seed(uint64_t seed);

// The learning rate a cell with "lr_from" trains at (see above): reads each named cell's spec and
// result from `suite_dir`/cells. Errors: a named cell has not finished, or has no valid rows.
double lr_from_cells(const std::vector<std::string>& ids, const std::string& suite_dir);

// Runs a plain cell (exp/cells/kinds.h): {"id", "train_seconds", "rows"}.
nlohmann::json run_plain_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
