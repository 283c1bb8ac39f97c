// Cells of the exit_swag suite (early exit and SWAG on classifiers): classify_exit and
// classify_swag, one file each (exp/cells/classify_exit.cpp, classify_swag.cpp). Each trains a
// classifier into <run_dir>/model (resumable), then measures it on fixed examples of the task's
// test split.
//
//   classify_exit  {"model" (with "exits"), "task", "train", "calibrate_n", "eval_n",
//                   "thresholds"}: temperatures fitted per exit on calibrate_n valid examples
//                   (seqlab calibrate); then on eval_n test examples, per-exit accuracy and ECE
//                   before/after calibration, and the early-exit curve at each threshold.
//   classify_swag  {"model", "task", "train" (with swag_start), "eval_n", "samples", "scale"}:
//                   the final weights (sgd), SWA (the mean) and SWAG's model average.
//
// Rows: ExitCalibrationRow (kind "exit_calibration") per exit and ExitCurveRow ("exit_curve") per
// threshold; UncertaintyRow ("uncertainty") per method. Every row starts with ClassifyRowBase.
#pragma once

#include "seqlab/exp/cells/fields.h"
#include "seqlab/model/model_config.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace seqlab {

struct ClassifyExitCellConfig : CellSpec {
  std::optional<std::string> label;  // default the id
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  int64_t calibrate_n = 0, eval_n = 0;
  std::vector<double> thresholds;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(label, "label", kUnset, "the rows' name in the report (default the id)");
    v(model, "model", kRequired, "a classifier with exits");
    v(task, "task", kRequired, "a classification task");
    v(train, "train", kRequired, "the training run");
    v(calibrate_n, "calibrate_n", kRequired, "valid examples the temperatures are fitted on");
    v(eval_n, "eval_n", kRequired, "test examples measured");
    v(thresholds, "thresholds", kRequired, "confidence thresholds (one above 1: every layer)");
  }
  ClassifyExitCellConfig() { visit(FieldDefaults{}); }
};

struct ClassifySwagCellConfig : CellSpec {
  std::optional<std::string> label;
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  int64_t eval_n = 0, samples = 0;
  double scale = 0;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(label, "label", kUnset, "the rows' name in the report (default the id)");
    v(model, "model", kRequired, "a classifier");
    v(task, "task", kRequired, "a classification task");
    v(train, "train", kRequired, "the training run, with swag_start");
    v(eval_n, "eval_n", kRequired, "test examples measured");
    v(samples, "samples", kRequired, "SWAG weight samples averaged");
    v(scale, "scale", kRequired, "SWAG sampling scale");
  }
  ClassifySwagCellConfig() { visit(FieldDefaults{}); }
};

// The fields every row of a classify cell carries.
struct ClassifyRowBase {
  std::string kind, label, task, arch, feature_map;  // feature_map: "" unless arch is linear
  int64_t n_layer, d_model;
  uint64_t seed;
  int64_t steps;
  double train_seconds;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string(), "");
    v(label, "label", std::string(), "");
    v(task, "task", std::string(), "");
    v(arch, "arch", std::string(), "");
    v(feature_map, "feature_map", std::string(), "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(d_model, "d_model", int64_t{0}, "");
    v(seed, "seed", uint64_t{0}, "");
    v(steps, "steps", int64_t{0}, "");
    v(train_seconds, "train_seconds", 0.0, "");
  }
  ClassifyRowBase() { visit(FieldDefaults{}); }
};

// One exit of a calibrated model (kind "exit_calibration").
struct ExitCalibrationRow : ClassifyRowBase {
  int64_t exit, layer;
  double temperature, accuracy, nll_before, nll_after, ece_before, ece_after;

  template <class V>
  void visit(V&& v) {
    ClassifyRowBase::visit(v);
    v(exit, "exit", int64_t{0}, "");
    v(layer, "layer", int64_t{0}, "");
    v(temperature, "temperature", 1.0, "");
    v(accuracy, "accuracy", 0.0, "");
    v(nll_before, "nll_before", 0.0, "");
    v(nll_after, "nll_after", 0.0, "");
    v(ece_before, "ece_before", 0.0, "");
    v(ece_after, "ece_after", 0.0, "");
  }
  ExitCalibrationRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// One threshold of the early-exit curve (kind "exit_curve").
struct ExitCurveRow : ClassifyRowBase {
  double threshold, accuracy, mean_layers, examples_per_s, difficulty_rho;
  bool has_difficulty;  // the task knows each example's difficulty (difficulty_rho is measured)
  std::vector<double> exit_share;

  template <class V>
  void visit(V&& v) {
    ClassifyRowBase::visit(v);
    v(threshold, "threshold", 0.0, "");
    v(accuracy, "accuracy", 0.0, "");
    v(mean_layers, "mean_layers", 0.0, "");
    v(examples_per_s, "examples_per_s", 0.0, "");
    v(difficulty_rho, "difficulty_rho", 0.0, "");
    v(has_difficulty, "has_difficulty", false, "");
    v(exit_share, "exit_share", std::vector<double>{}, "");
  }
  ExitCurveRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// One method of a SWAG cell (kind "uncertainty").
struct UncertaintyRow : ClassifyRowBase {
  std::string method;  // sgd | swa | swag
  double accuracy, nll, ece;
  int64_t n, snapshots, rank;
  // Against the annotators' distributions, where the task has them.
  std::optional<double> entropy_pearson, entropy_spearman, kl_annotators;

  template <class V>
  void visit(V&& v) {
    ClassifyRowBase::visit(v);
    v(method, "method", std::string(), "");
    v(accuracy, "accuracy", 0.0, "");
    v(nll, "nll", 0.0, "");
    v(ece, "ece", 0.0, "");
    v(n, "n", int64_t{0}, "");
    v(snapshots, "snapshots", int64_t{0}, "");
    v(rank, "rank", int64_t{0}, "");
    v(entropy_pearson, "entropy_pearson", kUnset, "");
    v(entropy_spearman, "entropy_spearman", kUnset, "");
    v(kl_annotators, "kl_annotators", kUnset, "");
  }
  UncertaintyRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// Shared by both kinds (exp/cells/classify.cpp): trains (or resumes) the cell's classifier into
// <run_dir>/model and loads it; `base` holds the fields every row carries.
struct TrainedClassifier {
  LoadedModel lm;
  TaskConfig task;
  uint64_t seed = 0;
  ClassifyRowBase base;
};
TrainedClassifier train_classifier(const std::string& label, const ModelConfig& model,
                                   const TaskConfig& task, const TrainConfig& train,
                                   const std::string& run_dir);

}  // namespace seqlab
