// How a linear attention's weights compare with the softmax attention it replaces: Hedgehog's
// (Zhang et al. 2024) two properties of softmax that earlier feature maps lack.
//
//   spikiness    the entropy of each attention row, -sum_j p_j log p_j in nats over the keys
//                j <= t; lower = spikier (a one-hot row has 0, a uniform row over n keys log n);
//   monotonicity the Spearman rank correlation between a row's linear-attention weights and the
//                softmax weights over the same keys: 1 when the linear map ranks the keys as
//                softmax does.
//
// Both are computed per row (query) and averaged over rows, per layer and head. Row 0 (one key)
// says nothing and is skipped; a row where either side gives every key the same weight has no
// rank correlation and is left out of the Spearman mean (rows_rho counts the rest). Linear
// attention weights can be negative (RFA's trigonometric features): the entropy is that of the
// row clamped at 0 and renormalised, and negative_mass reports how much was clamped.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace seqlab {

// Entropy in nats of a row of nonnegative weights (negative entries count as 0), renormalised to
// sum to one; 0 for an all-zero row.
double row_entropy(const std::vector<double>& w);

// The ranks of v, 1-based, ties sharing their average rank: {10, 20, 20, 5} -> {2, 3.5, 3.5, 1}.
std::vector<double> average_ranks(const std::vector<double>& v);

// Spearman's rho of a and b (Pearson's correlation of their average ranks); NaN when either is
// constant or they have fewer than two entries.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// One head of one layer, averaged over the rows (queries t = 1..T-1) of every sequence.
struct HeadShape {
  int64_t layer = 0, head = 0;
  double entropy_ref = 0;    // the reference (softmax) rows' mean entropy
  double entropy = 0;        // the compared (linear) rows' mean entropy
  double spearman = 0;       // mean rho over rows_rho rows (NaN when there are none)
  double negative_mass = 0;  // mean over rows of the negative weights' share of sum |w|
  int64_t rows = 0, rows_rho = 0;
};

// ref (softmax) and w (linear), both [B,H,T,T] causal attention weights (row t: keys 0..t) of
// one layer -> one HeadShape per head, labelled `layer`.
std::vector<HeadShape> attention_shape(const torch::Tensor& ref, const torch::Tensor& w,
                                       int64_t layer);

}  // namespace seqlab
