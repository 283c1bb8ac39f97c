// Evaluation of a model on a task at given lengths, on fixed seeded evaluation sets.
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/tasks/task.h"

namespace seqlab {

struct EvalResult {
  int64_t length = 0;
  double accuracy = 0, loss = 0;
  int64_t n = 0;                        // scored positions (or sequences)
  double seq_accuracy = 0;              // sequences with every scored position right
  std::map<std::string, double> extra;  // task-specific metrics, averaged over sequences
};

// Scores `n_seq` sequences of `length` tokens, in batches of `batch`, from the evaluation stream
// of `seed` (disjoint from the training stream of the same seed), drawn from `split` for tasks
// built on a dataset (Task::sample_split).
EvalResult evaluate(SeqModelImpl& model, const Task& task, int64_t length, int64_t n_seq,
                    int64_t batch, uint64_t seed, Split split = Split::valid);

// The input-blind baseline on the same sequences evaluate() scores: the best predictor that never
// reads its input, i.e. at every scored position (lm and tag heads) the class most frequent there,
// or the majority class (classify head). The classes are counted on a disjoint stream of n_seq
// sequences of the same length and then scored with the task's own scorer, so accuracy and
// seq_accuracy mean what they mean for a model. `loss` is left 0 (a one-hot guess has none worth
// reporting). A per-token score that this predictor already reaches says nothing about what a
// model read: e.g. on bucket_sort it rises with the length (0.78 at n = 40, 0.94 at n = 500),
// because sorted runs of k symbols have boundaries near j·n/k. An error for a task without one
// (Task::has_blind_baseline).
EvalResult evaluate_blind(const Task& task, int64_t length, int64_t n_seq, int64_t batch,
                          uint64_t seed, Split split = Split::valid);

// The seed of the evaluation stream for a length: never equal to a training-step seed.
uint64_t eval_seed(uint64_t seed, int64_t length);

}  // namespace seqlab
