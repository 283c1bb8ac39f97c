// The task interface: a seeded generator of (input, target, mask) batches and a scorer.
//
// A task is deterministic per seed: sample(B, T, seed) always returns the same batch, so training
// data needs no cursor beyond the step number (exact resume), and evaluation sets are fixed.
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/core/rng.h"
#include "seqlab/text/corpus.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace seqlab {

// Options of every task, in one field list. A task reads the ones it uses and ignores the rest;
// each task validates its own (make_task turns an impossible value into seqlab::Error).
struct TaskConfig {
  std::string task;                  // registry name
  int64_t min_len = 0, max_len = 0;  // training lengths (inclusive), sampled uniformly per batch
  int64_t vocab = 0;                 // alphabet size of tasks that have one (0 = task default)
  int64_t n_types = 0;               // Dyck: bracket types k
  int64_t depth = 0;                 // Dyck: depth bound m; pointer_chase: most hops
  int64_t n_pairs = 0;               // mqar: key-value pairs (0 = derived from the length)
  int64_t modulus = 0;               // modular_arithmetic / cycle_navigation
  double threshold = 0;              // anbn / anbncn: acceptance probability threshold
  std::string corpus;                // lm: "wordnet" or comma-separated text files
  std::string tokenizer;             // lm: "byte", "bpe:<dir>", ...

  template <class V>
  void visit(V&& v) {
    v(task, "task", std::string("parity"), "task name (see `seqlab tasks`)");
    v(min_len, "min-len", int64_t{0}, "shortest training sequence (0 = the task's minimum)");
    v(max_len, "max-len", int64_t{40}, "longest training sequence");
    v(vocab, "vocab", int64_t{0}, "alphabet size of tasks that have one (0 = task default)");
    v(n_types, "n-types", int64_t{2}, "dyck_bounded: bracket types k");
    v(depth, "depth", int64_t{2},
      "dyck_bounded: maximum nesting depth m; pointer_chase: most hops per query");
    v(n_pairs, "n-pairs", int64_t{0}, "mqar: key-value pairs (0 = derived from the length)");
    v(modulus, "modulus", int64_t{5}, "modular_arithmetic / cycle_navigation modulus");
    v(threshold, "threshold", 0.5,
      "anbn / anbncn: a string is accepted when every determined next symbol gets probability "
      "above this");
    v(corpus, "corpus", std::string("wordnet"),
      "lm: text corpus, `wordnet` (WordNet 3.0 glosses) or comma-separated text files, one "
      "document per line");
    v(tokenizer, "tokenizer", std::string("byte"),
      "lm: tokenizer, `byte` or a BPE directory (see `seqlab tokenizer`)");
  }
  TaskConfig() { visit(DefaultsVisitor{}); }
  nlohmann::json to_json() const;
  static TaskConfig from_json(const nlohmann::json& j, const std::string& source);
};

struct Batch {
  torch::Tensor input;   // [B,T] int64 tokens
  torch::Tensor target;  // [B,T] int64 (lm/tag) or [B] (classify)
  torch::Tensor mask;    // [B,T] bool: positions that are trained on and scored (lm/tag only)
  // Optional, set by the tasks that know them (undefined otherwise):
  torch::Tensor valid;       // [B,T] bool, classify: the real tokens, the ones pooled (padding off)
  torch::Tensor soft;        // [B,C] float: the annotators' label distribution of each example
  torch::Tensor difficulty;  // [B] float: each example's known difficulty (higher = harder)
};

struct Score {
  double loss = 0;          // mean cross-entropy over scored positions
  double accuracy = 0;      // fraction of scored positions (or sequences) predicted right
  int64_t n = 0;            // scored positions (or sequences)
  double seq_accuracy = 0;  // fraction of sequences with every scored position right
  int64_t n_seq = 0;        // sequences
  // Task-specific metrics (e.g. "max_n_accepted"); evaluate() averages them over batches,
  // weighted by n_seq.
  std::map<std::string, double> extra;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::string head() const = 0;   // lm | tag | classify
  virtual int64_t n_classes() const = 0;  // 0 for lm
  virtual int64_t min_length() const { return 1; }
  // A batch of B sequences of length T; deterministic in seed.
  virtual Batch sample(int64_t batch, int64_t length, uint64_t seed) const = 0;
  // A batch from one split. Tasks built on a fixed dataset (WordNet) draw from that split's
  // examples; generated tasks have no splits (their evaluation streams use other seeds) and
  // return sample(). sample() itself is the train split.
  virtual Batch sample_split(int64_t batch, int64_t length, uint64_t seed, Split split) const {
    return sample(batch, length, seed);
  }
  // Scores model output (lm/tag: [B,T,C]; classify: [B,C]) against a batch.
  virtual Score score(const torch::Tensor& logits, const Batch& b) const;
  // Whether the input-blind baseline (train/evaluate.h) means anything here: false when the
  // stream length alone fixes the targets, which a causal model has to work out by reading
  // (anbn has one string per length, so guessing per position would score 1).
  virtual bool has_blind_baseline() const { return true; }
};

// The training loss: mean cross-entropy over the scored positions (or sequences).
torch::Tensor task_loss(const torch::Tensor& logits, const Batch& b);

}  // namespace seqlab
