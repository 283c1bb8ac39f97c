// Calibration and uncertainty measures for classifiers: expected calibration error, temperature
// scaling (Guo et al. 2017), and agreement of predictive uncertainty with annotator disagreement.
#pragma once

#include <torch/torch.h>

namespace seqlab {

// Expected calibration error: examples binned by top probability into `bins` equal-width bins;
// the mean over examples of |accuracy(bin) - confidence(bin)|. probs [N,C], target [N] int64.
double expected_calibration_error(const torch::Tensor& probs, const torch::Tensor& target,
                                  int64_t bins = 15);

// Mean negative log-likelihood of the targets under probs [N,C] (probabilities clamped at 1e-12).
double mean_nll(const torch::Tensor& probs, const torch::Tensor& target);

// The temperature T > 0 minimising the NLL of softmax(logits / T): golden-section search over
// 1/T in [1e-3, 1e3] in log space (the NLL is convex in 1/T, so the minimum is global), to a
// relative precision of 1e-6. logits [N,C], target [N].
double fit_temperature(const torch::Tensor& logits, const torch::Tensor& target);

// Entropy in nats of each row of probs [N,C] -> [N].
torch::Tensor entropy(const torch::Tensor& probs);

// Pearson correlation of two [N] tensors; 0 when either is constant.
double pearson(const torch::Tensor& a, const torch::Tensor& b);
// Spearman rank correlation (average ranks for ties) of two [N] tensors.
double spearman(const torch::Tensor& a, const torch::Tensor& b);

// Mean KL(p || q) over rows of [N,C] distributions (q clamped at 1e-12): how far the model's
// predictive distribution q is from the annotators' p.
double mean_kl(const torch::Tensor& p, const torch::Tensor& q);

}  // namespace seqlab
