// lm: next-token language modelling on a text corpus (text/corpus.h) with a tokenizer
// (text/tokenizer.h).
//
// Each split of the corpus becomes one token stream, every document followed by the tokenizer's
// end-of-text token:
//   doc_1 EOS doc_2 EOS ... doc_n EOS
// sample(B, T, seed) cuts B windows of T + 1 tokens from the train stream at offsets drawn
// uniformly from the seed: input = the first T tokens, target = the last T (the input shifted by
// one), every position scored. The valid and test streams are for evaluate_lm (perplexity over
// consecutive windows, train/evaluate_lm.h); the periodic evaluation of the trainer and
// `seqlab eval` use them.
//
// Options: --corpus (wordnet | comma-separated text files), --tokenizer (byte | bpe:<dir> | ...),
// --max-len T (window length). vocab_size is the tokenizer's; head lm.
//
// Cost: a stream is built on first use and then kept (int64 per token: WordNet's train split is
// about 10 M byte tokens, ~80 MB). The train split is loaded by the constructor, which checks
// that it holds at least --max-len + 1 tokens. Thread-safe: streams are built under a mutex and
// never change afterwards.
#pragma once

#include "seqlab/tasks/task.h"
#include "seqlab/text/corpus.h"
#include "seqlab/text/tokenizer.h"

#include <array>
#include <mutex>

namespace seqlab {

class LmTask : public Task {
 public:
  explicit LmTask(const TaskConfig& cfg);
  std::string name() const override { return "lm"; }
  int64_t vocab_size() const override { return tokenizer_->vocab_size(); }
  std::string head() const override { return "lm"; }
  int64_t n_classes() const override { return 0; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  // The token stream of a split (built on first call, then cached).
  const std::vector<int64_t>& tokens(Split split) const;
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& corpus() const { return corpus_; }

 private:
  std::string corpus_;
  std::unique_ptr<Tokenizer> tokenizer_;
  mutable std::mutex mu_;
  mutable std::array<bool, 3> built_{};
  mutable std::array<std::vector<int64_t>, 3> streams_;
  mutable std::vector<std::string> train_docs_;  // held from the constructor until tokenized
};

}  // namespace seqlab
