// The WordNet reader: a hand-written fake with every field the parser must get right, the error
// cases, and the real WordNet 3.0 (counts, splits agreeing with the wordnet corpus, lexnames).
#include "seqlab/text/wordnet.h"

#include "seqlab/core/error.h"
#include "seqlab/text/corpus.h"

#include "split_testing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("seqlab_test_wordnet." + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct WordnetDir {
  explicit WordnetDir(const std::string& dir) { setenv("SEQLAB_WORDNET_DIR", dir.c_str(), 1); }
  ~WordnetDir() { unsetenv("SEQLAB_WORDNET_DIR"); }
};

const char* kHeader = "  1 This software and database is being provided to you, the LICENSEE\n";

// A fake WordNet: a license header, multi-word synsets, an adjective marker, a satellite and a
// pointer to it, lexical and semantic pointers, verb frames, glosses with and without examples.
std::string write_fake(const std::string& name) {
  const auto d = scratch(name);
  write(d / "data.noun",
        std::string(kHeader) +
            "00001740 03 n 01 entity 0 001 ~ 00002000 n 0000 | that which exists  \n"
            "00002000 05 n 02 dog 0 domestic_dog 0 003 @ 00001740 n 0000 ! 00003000 n 0101 "
            "+ 00001000 v 0201 | a member of the genus Canis; \"the dog barked all night\"  \n"
            "00003000 05 n 01 cat 0 001 ! 00002000 n 0101 | feline mammal  \n");
  write(d / "data.verb",
        std::string(kHeader) +
            "00001000 29 v 01 breathe 0 002 * 00001100 v 0000 + 00002000 n 0102 02 + 02 00 + 08 "
            "00 | draw air into; \"I breathe\"  \n"
            "00001100 42 v 01 live 0 000 01 + 02 00 | be alive  \n");
  write(
      d / "data.adj",
      std::string(kHeader) +
          "00001740 00 a 01 able(p) 0 001 ! 00002098 a 0101 | having the means; \"able to swim\"  "
          "\n"
          "00002098 00 a 01 unable 0 002 ! 00001740 a 0101 & 00002200 s 0000 | not able  \n"
          "00002200 00 s 01 incapable 0 001 & 00002098 a 0000 | lacking ability; a; b  \n");
  write(d / "data.adv", std::string(kHeader) + "00001000 02 r 01 quickly 0 000 | with speed  \n");
  return d.string();
}

template <class F>
void expect_error(F f, std::vector<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needles[0] << "'";
  } catch (const Error& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << n;
  }
}

using seqlab::testing::expected_split;

}  // namespace

TEST(WordNet, FakeParsesEveryField) {
  WordNet wn(write_fake("fake"));
  ASSERT_EQ(wn.synsets().size(), 9u);
  const int64_t dog = wn.find('n', 2000);
  ASSERT_GE(dog, 0);
  const Synset& d = wn.synsets()[dog];
  EXPECT_EQ(d.pos, 'n');
  EXPECT_EQ(d.lex_filenum, 5);
  EXPECT_STREQ(wordnet_lexname(d.lex_filenum), "noun.animal");
  EXPECT_EQ(d.lemmas, (std::vector<std::string>{"dog", "domestic_dog"}));
  EXPECT_EQ(d.gloss, "a member of the genus Canis; \"the dog barked all night\"");
  EXPECT_EQ(d.definition(), "a member of the genus Canis");
  ASSERT_EQ(d.pointers.size(), 3u);
  EXPECT_EQ(d.pointers[0].symbol, "@");
  EXPECT_EQ(d.pointers[0].index, wn.find('n', 1740));
  EXPECT_EQ(d.pointers[0].source, 0);
  EXPECT_EQ(d.pointers[1].symbol, "!");
  EXPECT_EQ(d.pointers[1].source, 1);
  EXPECT_EQ(d.pointers[1].target, 1);
  EXPECT_EQ(d.pointers[2].pos, 'v');
  EXPECT_EQ(d.pointers[2].source, 2);
  EXPECT_EQ(d.pointers[2].index, wn.find('v', 1000));
  EXPECT_EQ(d.split, expected_split("n:00002000"));

  const Synset& able = wn.synsets()[wn.find('a', 1740)];
  EXPECT_EQ(able.lemmas, std::vector<std::string>{"able"}) << "the (p) marker is cut";
  EXPECT_EQ(able.definition(), "having the means");
  const int64_t sat = wn.find('s', 2200);
  ASSERT_GE(sat, 0) << "a satellite is found under 's' and 'a'";
  EXPECT_EQ(sat, wn.find('a', 2200));
  EXPECT_EQ(wn.synsets()[sat].ss_type, 's');
  EXPECT_EQ(wn.synsets()[sat].pos, 'a');
  EXPECT_EQ(wn.synsets()[sat].definition(), "lacking ability; a; b") << "no example: all of it";
  EXPECT_EQ(wn.synsets()[wn.find('a', 2098)].pointers[1].index, sat);
  EXPECT_EQ(wn.synsets()[wn.find('v', 1100)].lex_filenum, 42);
  EXPECT_EQ(wn.synsets()[wn.find('r', 1000)].gloss, "with speed");
  EXPECT_EQ(wn.find('n', 1234), -1);
  EXPECT_EQ(wn.find('v', 2000), -1) << "the pos is part of the name";
}

TEST(WordNet, ErrorsNameTheFile) {
  const auto dir = write_fake("missing");
  fs::remove(fs::path(dir) / "data.adv");
  expect_error([&] { WordNet wn(dir); }, {dir + "/data.adv", "wordnet-base"});
  {
    WordnetDir env(dir);
    expect_error([] { load_wordnet(); }, {dir + "/data.adv"});
  }

  const auto bad = write_fake("bad_lexfile");
  write(fs::path(bad) / "data.adv", "00001000 99 r 01 quickly 0 000 | with speed\n");
  expect_error([&] { WordNet wn(bad); }, {bad + "/data.adv:1", "lex_filenum 99"});

  const auto dangling = write_fake("dangling");
  write(fs::path(dangling) / "data.adv", "00001000 02 r 01 quickly 0 001 \\ 00009999 a 0101 | x\n");
  expect_error([&] { WordNet wn(dangling); }, {"a:00009999", "does not exist"});

  const auto cut = write_fake("cut");
  write(fs::path(cut) / "data.adv", "00001000 02 r 01 quickly 0 002 \\ 00001740 a 0101 | x\n");
  expect_error([&] { WordNet wn(cut); }, {cut + "/data.adv:1"});
  EXPECT_THROW(wordnet_lexname(45), Error);
}

TEST(WordNet, SharedWhileHeld) {
  WordnetDir env(write_fake("shared"));
  auto a = load_wordnet(), b = load_wordnet();
  EXPECT_EQ(a.get(), b.get());
}

TEST(WordNet, RealWordNetMatchesTheCorpus) {
  if (!fs::exists(wordnet_dir() + "/data.noun")) GTEST_SKIP() << "no WordNet in " << wordnet_dir();
  const auto t0 = std::chrono::steady_clock::now();
  auto wn = load_wordnet();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 3.0) << "parsing WordNet took " << secs << " s";
  // WordNet 3.0: 82,115 noun, 13,767 verb, 18,156 adjective and 3,621 adverb synsets.
  std::map<char, int64_t> per_pos;
  std::array<int64_t, 3> per_split{};
  for (const auto& s : wn->synsets()) {
    ++per_pos[s.pos];
    ++per_split[static_cast<size_t>(s.split)];
    char key[16];
    std::snprintf(key, sizeof key, "%c:%08u", s.pos, s.offset);
    ASSERT_EQ(s.split, expected_split(key)) << key;
    // The lexicographer file agrees with the part of speech (adj.ppl and adj.* for adjectives).
    const std::string lex = wordnet_lexname(s.lex_filenum);
    const std::string want = s.pos == 'n'   ? "noun."
                             : s.pos == 'v' ? "verb."
                             : s.pos == 'a' ? "adj."
                                            : "adv.";
    ASSERT_EQ(lex.rfind(want, 0), 0u) << key << " in " << lex;
    ASSERT_FALSE(s.definition().empty()) << key;
  }
  EXPECT_EQ(per_pos['n'], 82115);
  EXPECT_EQ(per_pos['v'], 13767);
  EXPECT_EQ(per_pos['a'], 18156);
  EXPECT_EQ(per_pos['r'], 3621);
  // The same split as the wordnet corpus: as many documents, each ending with the gloss.
  for (Split sp : {Split::valid, Split::test}) {
    const auto docs = load_corpus("wordnet", sp);
    ASSERT_EQ(static_cast<int64_t>(docs.size()), per_split[static_cast<size_t>(sp)]);
    size_t j = 0;
    for (const auto& s : wn->synsets()) {
      if (s.split != sp) continue;
      const auto& doc = docs[j++];
      ASSERT_GE(doc.size(), s.gloss.size());
      ASSERT_EQ(doc.substr(doc.size() - s.gloss.size()), s.gloss);
    }
  }
}
