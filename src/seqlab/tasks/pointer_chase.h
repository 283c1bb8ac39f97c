// pointer_chase: N symbols that are positions, then a query "follow the pointers k times from
// position p"; k = 1 (easy) up to --depth hops (hard).
//
// A task whose examples need different depths, for early exit (Schwartz et al. 2020, "The Right
// Tool for the Job"): each hop is one positional lookup, which one attention layer does (index
// lookup, Bhattamishra et al. 2024), and hop j + 1 can only start once hop j's symbol is in the
// query's state. So a classifier after layer l can answer queries of up to l hops and the first
// exit of a model is much worse than its last: a confidence threshold has a real speed/accuracy
// trade to make, and the known hop count is each example's difficulty.
//
// Layout: x_0 .. x_{N-1} Q, N = T - 1 (--max-len at least 3). Symbols x_i are uniform in [0, N),
// i.e. each is a position; token ids: symbols 0..N-1 (the classes, so a tied head can read them),
// query tokens Q(k, p) = N + (k - 1) N + p for k in 1..K (K = --depth, 1..4; default 2) and p in
// [0, N). The label of Q(k, p) is x^k(p): x_p, x_{x_p}, ... The hop count k is uniform per example
// (exactly balanced per batch: B/K each, the remainder to K consecutive hop counts from a random
// start, so a batch of 1 is uniform too; shuffled) and
// difficulty = k - 1. Classes and vocabulary depend on N, so every sample of a task has one length:
// sample() rejects a length other than --max-len, which is also min_length().
//
// Batch (head classify; train with --pooling last, the query is the last token): input [B,T];
// target [B]; valid/mask [B,T] all true; difficulty [B] float. A generated task: sample_split() is
// sample().
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class PointerChaseTask : public Task {
 public:
  explicit PointerChaseTask(const TaskConfig& cfg);
  std::string name() const override { return "pointer_chase"; }
  int64_t vocab_size() const override { return n_ * (1 + hops_); }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return n_; }
  int64_t min_length() const override { return n_ + 1; }  // the one length
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t query(int64_t k, int64_t p) const { return n_ + (k - 1) * n_ + p; }
  int64_t hops() const { return hops_; }

 private:
  int64_t n_;     // N = max_len - 1 symbols
  int64_t hops_;  // K
};

}  // namespace seqlab
