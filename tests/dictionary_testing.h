// A fake WordNet with a known noun hierarchy, for the dictionary, DefSent and embed tests:
//
//   entity (Tops)                depth 1
//   ├─ animal                    depth 2
//   │  ├─ quadruped              depth 3
//   │  ├─ cat                    depth 3
//   │  └─ dog (also ← pet, ← quadruped)   depth 1 + max(2, 2, 3) = 4
//   │     └─ puppy (instance)    depth 5
//   ├─ pet                       depth 2
//   └─ artifact (lemmas artifact, dog: a second sense of "dog")   depth 2
//
// cut, cas (← animal) and dag (← artifact) are test-split words, so their synsets are held out
// (as are able and live); bob, fit (← animal) and cot (← artifact) are valid-split words, held out
// for the valid split; plus two verbs in separate trees, an adjective and an adverb.
// write_empty_wordnet writes the four files with no synsets (which the WordNet reader refuses).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace seqlab::testing {

inline std::filesystem::path dict_scratch(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("seqlab_test_dictionary." + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline const char* kWnHeader = "  1 This software and database is being provided to you\n";

inline std::string write_fake_wordnet(const std::string& name) {
  const auto d = dict_scratch(name);
  write_text(d / "data.noun",
             std::string(kWnHeader) +
                 "00000100 03 n 01 entity 0 000 | that which exists  \n"
                 "00000200 05 n 01 animal 0 001 @ 00000100 n 0000 | a living organism  \n"
                 "00000300 05 n 01 pet 0 001 @ 00000100 n 0000 | an animal kept for company  \n"
                 "00000400 05 n 01 quadruped 0 001 @ 00000200 n 0000 | an animal with four feet  \n"
                 "00000500 05 n 03 dog 0 domestic_dog 0 Fido 0 003 @ 00000200 n 0000 @ 00000300 n "
                 "0000 @ 00000400 n 0000 | a member of the genus Canis; \"the dog barked\"  \n"
                 "00000600 05 n 01 cat 0 001 @ 00000200 n 0000 | feline mammal  \n"
                 "00000700 05 n 01 puppy 0 001 @i 00000500 n 0000 | a young dog  \n"
                 "00000800 06 n 02 artifact 0 dog 0 001 @ 00000100 n 0000 | a man-made object  \n"
                 "00001000 05 n 01 cut 0 001 @ 00000200 n 0000 | a short-tailed animal  \n"
                 "00001100 05 n 01 cas 0 001 @ 00000200 n 0000 | a long-tailed animal  \n"
                 "00001200 06 n 01 dag 0 001 @ 00000800 n 0000 | a tool for cutting  \n"
                 "00001300 05 n 01 cot 0 001 @ 00000800 n 0000 | a light bed  \n"
                 "00001400 05 n 01 bob 0 001 @ 00000200 n 0000 | a small bobbing animal  \n"
                 "00001500 05 n 01 fit 0 001 @ 00000200 n 0000 | a strong animal  \n");
  write_text(d / "data.verb", std::string(kWnHeader) +
                                  "00000100 29 v 01 breathe 0 000 01 + 02 00 | draw air into  \n"
                                  "00000200 42 v 01 live 0 000 01 + 02 00 | be alive  \n");
  write_text(d / "data.adj",
             std::string(kWnHeader) + "00000100 00 a 01 able 0 000 | having the means  \n");
  write_text(d / "data.adv",
             std::string(kWnHeader) + "00000100 02 r 01 quickly 0 000 | with speed  \n");
  return d.string();
}

inline std::string write_empty_wordnet(const std::string& name) {
  const auto d = dict_scratch(name);
  for (const char* f : {"data.noun", "data.verb", "data.adj", "data.adv"})
    write_text(d / f, kWnHeader);
  return d.string();
}

}  // namespace seqlab::testing
