// The corpus split rule written out once more, independently of src/seqlab/text/: FNV-1a 64 of
// the key ("pos:offset" for WordNet synsets, the line for text files), % 100, 90 / 5 / 5. The
// corpus, WordNet and WordNet-task tests check the library's splits against it.
#pragma once

#include "seqlab/text/corpus.h"

#include <cstdint>
#include <string>

namespace seqlab::testing {

inline Split expected_split(const std::string& key) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  return h % 100 < 90 ? Split::train : h % 100 < 95 ? Split::valid : Split::test;
}

}  // namespace seqlab::testing
