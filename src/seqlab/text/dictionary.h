// A dictionary built from WordNet 3.0 for definition-trained sentence embeddings (DefSent,
// Tsukagoshi et al. 2021; DefSent+, Liu 2024): entries (words, multi-word lemmas included) with
// their definitions, a deterministic split of the entries, and the Wu–Palmer similarity of two
// synsets (the graded target of the similarity proxy in methods/embed_eval.h).
//
// Entry: a lemma of any part of speech, lower-cased, '_' written as ' ' ("domestic dog"). Its
// definitions are the definition() (gloss without examples) of every synset that lists it; an
// entry with several senses has several definitions, and a synset's definition belongs to each of
// its lemmas. Synsets whose definition is empty are skipped.
//
// Split: of the entry, by its word: split_of_key(word) (text/corpus.h: FNV-1a 64 % 100, 90/5/5),
// so all senses of a word fall on the same side. A synset can still have lemmas on both sides; a
// definition is "held out" only when none of its synset's lemmas is a train entry
// (heldout_synset()).
//
// Wu–Palmer (1994): depth(x) = 1 for a root, else 1 + the largest depth of its hypernyms (@ and
// @i, so the longest path to a root, as NLTK counts the depth of a subsumer); dist(x, c) is the
// length of the shortest hypernym path from x up to c (0 when x == c). Over the common
// subsumers c of a and b,
//   wup(a, b) = max_c 2 depth(c) / (dist(a, c) + dist(b, c) + 2 depth(c)),
// and there is none when a and b share no subsumer (e.g. verbs from different trees).
#pragma once

#include "seqlab/text/corpus.h"
#include "seqlab/text/wordnet.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace seqlab {

struct DictEntry {
  std::string word;              // lower case, spaces for '_'
  Split split = Split::train;    // split_of_key(word)
  std::vector<int32_t> synsets;  // indices into WordNet::synsets(), increasing
};

class Dictionary {
 public:
  // Every entry of `wn` whose synsets have a non-empty definition. pos: the synset file letters
  // to take entries from ("nvar" = all). Throws seqlab::Error when no entry is left.
  explicit Dictionary(std::shared_ptr<const WordNet> wn, const std::string& pos = "nvar");

  const WordNet& wordnet() const { return *wn_; }
  const std::vector<DictEntry>& entries() const { return entries_; }  // sorted by word
  // The entries of one split, as indices into entries().
  std::vector<int32_t> split_entries(Split s) const;
  // Synset i's definition (the gloss without examples, trimmed).
  std::string definition(int32_t synset) const;
  // Index of the entry spelled `word` (lower case, spaces), -1 when absent.
  int32_t find(const std::string& word) const;
  // Whether synset i has a definition and none of its lemmas is a train entry: its definition
  // was never seen in definition training.
  bool heldout_synset(int32_t synset) const;
  // The entries (indices) that list synset i.
  const std::vector<int32_t>& synset_entries(int32_t synset) const;

 private:
  std::shared_ptr<const WordNet> wn_;
  std::vector<DictEntry> entries_;
  std::unordered_map<std::string, int32_t> index_;
  std::vector<std::vector<int32_t>> by_synset_;  // synset -> entries
};

// The entry spelling of a WordNet lemma: lower case, '_' -> ' '.
std::string entry_word(const std::string& lemma);

// Wu–Palmer similarity over a WordNet's hypernym graph (see the header comment). Depths are
// computed once in the constructor; each query walks the ancestors of both synsets.
class WuPalmer {
 public:
  explicit WuPalmer(const WordNet& wn);
  // wup(a, b) in (0, 1], 1 for a == b; nullopt when they share no subsumer.
  std::optional<double> similarity(int32_t a, int32_t b) const;
  int32_t depth(int32_t s) const { return depth_[s]; }
  // Every hypernym ancestor of s (s included) with its shortest distance from s.
  std::unordered_map<int32_t, int32_t> ancestors(int32_t s) const;

 private:
  const WordNet& wn_;
  std::vector<int32_t> depth_;
};

}  // namespace seqlab
