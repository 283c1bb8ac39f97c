// Evaluation of classifiers beyond accuracy: early exit (calibrated per-exit confidence, the
// speed/accuracy curve of one threshold), and uncertainty (NLL, ECE, agreement with annotators,
// SWAG's Bayesian model average).
//
// Everything is measured on a ClassifySet: a fixed list of batches drawn from one split of a task
// with fixed seeds, so two measurements of the same model see the same examples.
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/swag.h"

#include <vector>

namespace seqlab {

struct ClassifySet {
  std::vector<Batch> batches;
  int64_t n = 0;                           // examples
  torch::Tensor target, soft, difficulty;  // [N], [N,C] (if known), [N] (if known)
};

// n examples of `length` tokens from `split`, in batches of `batch`, from the evaluation stream of
// `seed` (the same examples evaluate() scores).
ClassifySet classify_set(const Task& task, Split split, int64_t length, int64_t n, int64_t batch,
                         uint64_t seed);

// Per-exit logits on the set: one [N,C] tensor per exit of model.config().exit_layers().
std::vector<torch::Tensor> exit_logits_on(SeqModelImpl& model, const ClassifySet& set);

struct ExitCalibration {
  int64_t layer = 0;
  double temperature = 1, accuracy = 0;
  double nll_before = 0, nll_after = 0;  // at temperature 1 / at `temperature`
  double ece_before = 0, ece_after = 0;
};

// Temperature scaling per exit: fits each exit's temperature on the set (minimum NLL) and stores
// them in model.exit_temperature.
std::vector<ExitCalibration> calibrate_exits(SeqModelImpl& model, const ClassifySet& set);
// The same measures with the model's stored temperatures, fitting nothing.
std::vector<ExitCalibration> exit_calibration(SeqModelImpl& model, const ClassifySet& set);

struct ExitPoint {
  double threshold = 0;
  double accuracy = 0;
  double mean_layers = 0;          // blocks run per example
  double examples_per_s = 0;       // at batch 1, padding trimmed
  double difficulty_rho = 0;       // Spearman(layers used, known difficulty); 0 when unknown
  std::vector<double> exit_share;  // fraction of examples leaving at each exit
};

// Early-exit inference on every example of the set, one at a time, for each threshold.
std::vector<ExitPoint> exit_curve(SeqModelImpl& model, const ClassifySet& set,
                                  const std::vector<double>& thresholds);

struct UncertaintyScore {
  int64_t n = 0;
  double accuracy = 0, nll = 0, ece = 0;
  bool annotators = false;     // the set has annotator distributions (Batch::soft)
  double entropy_pearson = 0;  // predictive entropy vs annotator entropy
  double entropy_spearman = 0;
  double kl = 0;  // mean KL(annotators || prediction)
};

// Class probabilities [N,C] of the model as it is.
torch::Tensor predict_probs(SeqModelImpl& model, const ClassifySet& set);
// SWAG's Bayesian model average: the mean of the probabilities of `samples` weight samples at
// `scale` (scale 0 = SWA, the mean weights). The model's own weights are restored afterwards.
torch::Tensor swag_probs(SeqModelImpl& model, const Swag& swag, const ClassifySet& set,
                         int64_t samples, double scale, uint64_t seed);
UncertaintyScore score_probs(const torch::Tensor& probs, const ClassifySet& set);

}  // namespace seqlab
