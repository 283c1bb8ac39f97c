// pair_nli: sentence-pair inference, a proxy built from WordNet's lexical relations.
//
// Natural language inference asks whether a premise entails, contradicts or is neutral to a
// hypothesis. Here premise and hypothesis are the definitions (glosses without examples) of two
// WordNet 3.0 synsets A and B (text/wordnet.h), and the label comes from the relation between them:
//
//   0 entailment     B is a direct hypernym of A ("@" or "@i": "an A is a B") or A entails the
//                    verb B ("*": to snore entails to sleep). 86% nouns, 14% verbs.
//   1 neutral        A and B have the same part of speech and are unrelated: no pointer of any
//                    kind between them in either direction, and neither is an ancestor of the
//                    other through hypernym / instance-hypernym / entailment chains. A is the
//                    premise of a random entailment or contradiction pair (half each) and B is
//                    drawn uniformly from all synsets of A's part of speech, so the premises of the
//                    neutral class look like those of the other two: the premise alone does not
//                    tell neutral apart.
//   2 contradiction  a word of A is an antonym ("!") of a word of B: able / unable, day / night.
//                    53% adjectives, 26% nouns, 13% verbs, 8% adverbs.
//
// It is a proxy, not NLI: the pairs are definitions, not sentences about one situation, and part
// of speech partly separates entailment (never adjectives or adverbs) from contradiction for a
// model that notices it. Labels are exactly balanced per batch (B/3 each, the remainder to the
// lowest labels, shuffled).
//
// Layout (head classify): premise tokens, SEP, hypothesis tokens, PAD .. PAD (right padding).
// When premise + SEP + hypothesis exceed T, each side is cut to half of T - 1, the longer one
// taking what the shorter leaves. Token ids: the tokenizer's (--tokenizer, default byte) 0..V-1,
// SEP = V, PAD = V + 1, vocab_size = V + 2. Batch.valid = mask = the real tokens (SEP included);
// soft and difficulty are not set.
//
// Split: by the premise synset's hash (the split of text/corpus.h, 90 / 5 / 5). Hypotheses come
// from every split: a hypernym such as "entity" is the hypothesis of train and test pairs alike.
// sample() is the train split; sample_split() draws entailment and contradiction pairs uniformly
// (with replacement) from the pairs whose premise is in the split. Deterministic per seed.
//
// Cost: the constructor parses WordNet (shared, see load_wordnet) and lists the pairs (~100k
// entailment, ~8k contradiction) in well under a second. Thread-safe.
#pragma once

#include "seqlab/tasks/task.h"
#include "seqlab/text/tokenizer.h"
#include "seqlab/text/wordnet.h"

#include <array>
#include <utility>

namespace seqlab {

class PairNliTask : public Task {
 public:
  enum Label : int64_t { kEntailment = 0, kNeutral = 1, kContradiction = 2 };

  explicit PairNliTask(const TaskConfig& cfg);
  std::string name() const override { return "pair_nli"; }
  int64_t vocab_size() const override { return tokenizer_->vocab_size() + 2; }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return 3; }
  int64_t min_length() const override { return 9; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override {
    return sample_split(batch, length, seed, Split::train);
  }
  Batch sample_split(int64_t batch, int64_t length, uint64_t seed, Split split) const override;

  int64_t sep() const { return tokenizer_->vocab_size(); }
  int64_t pad() const { return tokenizer_->vocab_size() + 1; }
  const WordNet& wordnet() const { return *wn_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

  // One example as synset indices (into wordnet().synsets()) and its label.
  struct Pair {
    int32_t premise = 0, hypothesis = 0;
    int64_t label = 0;
  };
  // The B pairs sample_split(B, ., seed, split) lays out, in order.
  std::vector<Pair> draw_pairs(int64_t batch, uint64_t seed, Split split) const;
  // The entailment / contradiction pairs whose premise is in split.
  const std::vector<std::pair<int32_t, int32_t>>& pairs(Split split, Label label) const;

 private:
  bool related(int32_t a, int32_t b) const;

  std::shared_ptr<const WordNet> wn_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::array<std::vector<std::pair<int32_t, int32_t>>, 3> entail_, contra_;
  std::array<std::vector<int32_t>, 4> by_pos_;  // n, v, a, r: every synset of that pos
};

}  // namespace seqlab
