// A small text corpus for language-model tests: `lines` distinct lines of a ten-word vocabulary
// (each line starts with its number, so the lines spread over the hash-split train / valid / test;
// about 5% land in each of valid and test). Regular enough that a few training steps learn it.
#pragma once

#include <fstream>
#include <string>

namespace seqlab::testing {

inline void write_word_corpus(const std::string& path, int lines) {
  std::ofstream out(path);
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
  for (int i = 0; i < lines; ++i) {
    out << i;
    for (int j = 0; j < 4 + i % 5; ++j) out << " " << words[(i * 7 + j * 3) % 10];
    out << "\n";
  }
}

}  // namespace seqlab::testing
