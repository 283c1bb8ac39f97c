// string_equality: two strings of length L separated by a marker; are they equal?
//
// Bhattamishra et al. (NeurIPS 2024, "Separations in the Representational Capabilities of
// Transformers and Recurrent Architectures"): a Transformer of logarithmic width decides equality
// of two length-L strings, while a recurrent model has to carry all of the first string across the
// marker, a state of L log V bits.
//
// Layout: x_1..x_L SEP y_1..y_L, T = 2L + 1 (min_length 3); an even T gets one leading PAD, so the
// last position (read by a last-token classifier) is always y_L. Token ids: symbols 0..V-1
// (V = cfg.vocab, default 4), SEP = V, PAD = V + 1. Head classify, class 1 = equal.
// Labels are balanced exactly (ceil(B/2) equal pairs, shuffled). A negative is a near miss: y is a
// copy of x with one position (half of them) or two positions changed to a different symbol, so
// no summary short of the whole string (counts, first or last symbols) tells the classes apart.
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class StringEqualityTask : public Task {
 public:
  explicit StringEqualityTask(const TaskConfig& cfg);
  std::string name() const override { return "string_equality"; }
  int64_t vocab_size() const override { return vocab_ + 2; }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return 2; }
  int64_t min_length() const override { return 3; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t sep() const { return vocab_; }
  int64_t pad() const { return vocab_ + 1; }

 private:
  int64_t vocab_;  // V
};

}  // namespace seqlab
