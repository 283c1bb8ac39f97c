// copy_reverse_sort: a mixture of three transductions, marked by a task token.
//
// For the mixture-of-attentive-experts experiment (Peng et al. 2020): an input starts with one of
// three task tokens, then a string over k symbols; the output is the string copied, reversed or
// sorted (ascending), as the token says. The three tasks share an alphabet and a layout, so which
// task is asked is visible only in the first token, and a model whose experts specialise can route
// each task to its own expert (the suite measures the mutual information between the gate's
// chosen expert and the task).
//
// k = --vocab (0 = default 8; >= 2), symbols uniform, tasks uniform; k output classes.
// Layout (see seq2seq.h), n = 1 + m input tokens:
//   TASK x_1..x_m SEP BLANK^m, the BLANKs tagged with x, reverse(x) or sort(x); all m scored.
// T = 2m + 2 (an odd T gets one trailing PAD), m >= 1 so T >= 4.
// Token ids: x in 0..k-1, task tokens k (copy), k+1 (reverse), k+2 (sort), then SEP, BLANK, PAD.
#pragma once

#include "seqlab/tasks/seq2seq.h"

namespace seqlab {

class CopyReverseSortTask : public Seq2SeqTask {
 public:
  enum Kind : int64_t { kCopy = 0, kReverse = 1, kSort = 2 };
  static constexpr int64_t kTasks = 3;
  static constexpr const char* kNames[kTasks] = {"copy", "reverse", "sort"};

  explicit CopyReverseSortTask(const TaskConfig& cfg);
  std::string name() const override { return "copy_reverse_sort"; }
  int64_t n_classes() const override { return k_; }
  // The task (kCopy, kReverse, kSort) of each sequence of a batch: input [B,T] -> [B] int64.
  torch::Tensor task_of(const torch::Tensor& input) const;

 protected:
  int64_t n_symbols() const override { return k_ + kTasks; }
  int64_t output_length(int64_t n) const override { return n - 1; }
  int64_t min_input_length() const override { return 2; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override;

 private:
  int64_t k_;
};

}  // namespace seqlab
