// Text corpora for language modelling, split deterministically into train / valid / test.
//
//   wordnet  WordNet 3.0 glosses from Debian's wordnet-base (data.noun, data.verb, data.adj,
//            data.adv under /usr/share/wordnet, or $SEQLAB_WORDNET_DIR): one document per synset,
//            "lemma, lemma: gloss; \"example\"". Split by a hash of the synset's (file, offset).
//   files    one or more plain-text files (comma-separated paths): one document per non-empty
//            line. Split by a hash of the line's text.
//   dirs     a directory stands for its *.txt files in name order (scripts/make_english_corpus.py
//            writes the teacher's English corpus as such a directory, data/english).
// Sources mix in one comma-separated list, read in order: "wordnet,data/english".
//
// The split is a fixed function of the key: hash % 100 < 90 -> train, < 95 -> valid, else test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

enum class Split { train, valid, test };

Split parse_split(const std::string& name);  // "train" | "valid" | "test"
const char* split_name(Split s);

// The split rule applied to any stable key (FNV-1a 64 of the key's bytes, % 100: < 90 train,
// < 95 valid, else test). text/dictionary.h splits dictionary entries by their word with it.
Split split_of_key(std::string_view key);

// The documents of one split of a corpus, in a fixed order. spec: comma-separated sources, each
// "wordnet", a file or a directory. Throws seqlab::Error on a missing, empty or non-text corpus (naming the file).
std::vector<std::string> load_corpus(const std::string& spec, Split split);

}  // namespace seqlab
