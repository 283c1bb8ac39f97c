// supersense: classify a WordNet synset's definition into its lexicographer file (its
// "supersense", Ciaramita & Johnson 2003): 45 classes, noun.animal, verb.motion, adj.all, ...
// supersense_pos: the same inputs, the coarse label (part of speech: 4 classes).
//
// Example: one synset of WordNet 3.0 (text/wordnet.h). Input = its definition, the gloss without
// the quoted usage examples (the examples often contain the lemma itself and double the length;
// the definition alone is the classic gloss-classification input), tokenized by --tokenizer
// (default byte). Target = lex_filenum, 0..44, named by wordnet_lexname() (0 adj.all, 1 adj.pert,
// 2 adv.all, 3 noun.Tops .. 28 noun.time, 29 verb.body .. 43 verb.weather, 44 adj.ppl); for
// supersense_pos the part of speech of the synset's file: 0 noun, 1 verb, 2 adjective (satellites
// included), 3 adverb.
//
// Layout (head classify): the definition's tokens, truncated to T, then PAD to T (right padding).
// Token ids: the tokenizer's 0..V-1, PAD = V, vocab_size = V + 1. Batch.valid = the real tokens
// ([B,T] bool, never empty), Batch.mask = valid. soft and difficulty are not set.
//
// Split: the synset's, the same hash as the wordnet corpus (text/corpus.h): 90 / 5 / 5 by
// "pos:offset". sample() is the train split; sample_split() draws uniformly, with replacement, from
// the chosen split's synsets, so labels follow WordNet's own (skewed) distribution: the largest
// classes are adj.all (12% of synsets), noun.artifact and noun.person (9-10% each), the smallest
// noun.motive (42 synsets, 0.04%). Deterministic per seed.
//
// Cost: the constructor parses WordNet (shared, see load_wordnet) in a few tenths of a second;
// sample() tokenizes its B definitions. Thread-safe.
#pragma once

#include "seqlab/tasks/task.h"
#include "seqlab/text/tokenizer.h"
#include "seqlab/text/wordnet.h"

#include <array>

namespace seqlab {

class SupersenseTask : public Task {
 public:
  // coarse: the supersense_pos variant (4 classes).
  SupersenseTask(const TaskConfig& cfg, bool coarse);
  std::string name() const override { return coarse_ ? "supersense_pos" : "supersense"; }
  int64_t vocab_size() const override { return tokenizer_->vocab_size() + 1; }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return coarse_ ? 4 : kWordNetLexFiles; }
  int64_t min_length() const override { return 4; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override {
    return sample_split(batch, length, seed, Split::train);
  }
  Batch sample_split(int64_t batch, int64_t length, uint64_t seed, Split split) const override;

  int64_t pad() const { return tokenizer_->vocab_size(); }
  // The label of a synset (lex_filenum, or its part of speech 0..3 when coarse).
  int64_t label(const Synset& s) const;
  // Class names, index = label.
  std::vector<std::string> class_names() const;
  const WordNet& wordnet() const { return *wn_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The synsets of a split (indices into wordnet().synsets()), in file order.
  const std::vector<int32_t>& examples(Split split) const {
    return examples_[static_cast<size_t>(split)];
  }

 private:
  bool coarse_;
  std::shared_ptr<const WordNet> wn_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::array<std::vector<int32_t>, 3> examples_;
};

std::unique_ptr<Task> make_supersense(const TaskConfig& cfg);
std::unique_ptr<Task> make_supersense_pos(const TaskConfig& cfg);

// Right-padded classification rows, shared by the WordNet tasks: row i is tokens[i] truncated to
// length and followed by pad up to length. Returns input [B,T], target [B] (= targets),
// valid = mask [B,T] (the real tokens).
Batch pack_padded_rows(const std::vector<std::vector<int64_t>>& tokens,
                       const std::vector<int64_t>& targets, int64_t length, int64_t pad);

}  // namespace seqlab
