// A reader for WordNet 3.0's data files: every synset with its offset, part of speech,
// lexicographer file, lemmas, gloss and pointers, for the tasks built on WordNet's structure
// (supersense, pair_nli). text/corpus.h reads the same files as plain documents for language
// modelling.
//
// Files: data.noun, data.verb, data.adj and data.adv (wndb(5WN)) under $SEQLAB_WORDNET_DIR, else
// /usr/share/wordnet (Debian's wordnet-base). A synset is named by (pos, offset), pos being the
// letter of its file: n, v, a (adjectives, satellites included) or r. Pointers to a satellite
// ('s') are folded to 'a' the same way, so every pointer resolves to the synset it names.
//
// Split: the one of text/corpus.h, a function of the key "pos:offset" (pos the file letter, offset
// the 8 digits): FNV-1a 64 % 100 < 90 -> train, < 95 -> valid, else test. A synset's split here is
// the split its gloss document has in load_corpus("wordnet", ...).
//
// Cost: one read and parse of the four files (~21 MB, 117,659 synsets, ~350k pointers) takes a
// few tenths of a second and ~60 MB. load_wordnet() shares one parse between everything alive
// that asked for the same directory. The returned object is immutable and thread-safe to read.
#pragma once

#include "seqlab/text/corpus.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace seqlab {

// The 45 lexicographer files of WordNet 3.0 (lexnames(5WN)): 0 adj.all .. 44 adj.ppl.
constexpr int64_t kWordNetLexFiles = 45;
const char* wordnet_lexname(int64_t lex_filenum);
// The coarse part-of-speech class of a synset's pos letter: noun 0, verb 1, adjective (satellites
// included) 2, adverb 3.
int64_t wordnet_pos_class(char pos);

struct WordNetPointer {
  std::string symbol;   // "@" hypernym, "@i" instance hypernym, "~" hyponym, "!" antonym, ...
  char pos = 0;         // the target's file letter: n, v, a or r ('s' folded to 'a')
  uint32_t offset = 0;  // the target's synset offset
  int source = 0;       // word number in this synset (1-based); 0 = the whole synset
  int target = 0;       // word number in the target synset; 0 = the whole synset
  int32_t index = -1;   // the target's index in WordNet::synsets()
};

struct Synset {
  uint32_t offset = 0;
  char pos = 0;                     // file letter: n, v, a, r
  char ss_type = 0;                 // n, v, a, s (adjective satellite), r
  int lex_filenum = 0;              // 0..44, see wordnet_lexname
  Split split = Split::train;       // see the header comment
  std::vector<std::string> lemmas;  // words as in the file ('_' for spaces), adjective markers cut
  std::string gloss;                // definition, then its quoted examples ("; \"...\"")
  std::vector<WordNetPointer> pointers;

  // The gloss without its examples: everything before the first `; "` (the whole gloss when it
  // holds nothing else).
  std::string_view definition() const;
};

class WordNet {
 public:
  // Parses the four data files of dir. Throws seqlab::Error naming the file (and line) on a missing
  // file or a malformed line, and on a pointer to a synset that does not exist.
  explicit WordNet(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<Synset>& synsets() const { return synsets_; }
  // Index of synset (pos, offset) in synsets(), -1 if there is none. pos 's' counts as 'a'.
  int64_t find(char pos, uint32_t offset) const;

 private:
  std::string dir_;
  std::vector<Synset> synsets_;
  std::unordered_map<uint64_t, int32_t> index_;  // (pos << 32 | offset) -> index
};

// $SEQLAB_WORDNET_DIR when set and non-empty, else /usr/share/wordnet.
std::string wordnet_dir();

// The WordNet of wordnet_dir(), parsed once and shared while anyone holds it.
std::shared_ptr<const WordNet> load_wordnet();

// The split of synset (pos, offset), pos the file letter.
Split wordnet_split(char pos, uint32_t offset);

}  // namespace seqlab
