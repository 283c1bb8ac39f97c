// Cells of the exit_swag suite (early exit and SWAG on classifiers), run by the suite workers and
// selected by the cell's "kind". Each trains a classifier into <run_dir>/model (resumable), then
// measures it on fixed examples of the task's test split.
//
//   classify_exit  {"model" (with "exits"), "task", "train", "calibrate_n", "eval_n",
//                   "thresholds"}: temperatures fitted per exit on calibrate_n valid examples
//                   (seqlab calibrate); then on eval_n test examples, per-exit accuracy and ECE
//                   before/after calibration, and the early-exit curve at each threshold.
//   classify_swag  {"model", "task", "train" (with swag_start), "eval_n", "samples", "scale"}:
//                   the final weights (sgd), SWA (the mean) and SWAG's model average.
//
// Rows: {"kind": "exit_curve", label, task, arch, n_layer, threshold, accuracy, mean_layers,
// examples_per_s, difficulty_rho, exit_share}, {"kind": "exit_calibration", label, task, exit,
// layer, temperature, accuracy, nll_before, nll_after, ece_before, ece_after}, {"kind":
// "uncertainty", label, task, arch, method, accuracy, nll, ece, [entropy_pearson,
// entropy_spearman, kl_annotators]}; every row also has train_seconds and steps.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

nlohmann::json run_classify_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
