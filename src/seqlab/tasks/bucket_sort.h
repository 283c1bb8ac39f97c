// bucket_sort: read a string over an alphabet of k symbols, then write it sorted.
//
// Context-sensitive tier of Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky
// Hierarchy"). Counting each symbol suffices, so counter machines can do it, but the output has to
// be produced in order, position by position.
//
// k = --vocab (0 = default 5; must be >= 2), symbols uniform; k output classes.
// Layout (see seq2seq.h): x_1..x_n SEP BLANK^n, the BLANKs tagged with sort(x) ascending; all n
// scored. T = 2n + 1 (an even T gets one trailing PAD), n >= 1 so T >= 3.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class BucketSortTask : public Seq2SeqTask {
 public:
  explicit BucketSortTask(const TaskConfig& cfg);
  std::string name() const override { return "bucket_sort"; }
  int64_t n_classes() const override { return k_; }

 protected:
  int64_t n_symbols() const override { return k_; }
  int64_t output_length(int64_t n) const override { return n; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;

 private:
  int64_t k_;
};

}  // namespace seqlab
