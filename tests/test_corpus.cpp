// Text corpora: the WordNet data-file parser (on a hand-written fake and on the real WordNet 3.0),
// plain-text files, the deterministic splits and every error case.
#include "seqlab/text/corpus.h"

#include "seqlab/core/error.h"

#include "split_testing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("seqlab_test_corpus." + std::to_string(getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

std::string write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

using seqlab::testing::expected_split;

// Points $SEQLAB_WORDNET_DIR at a directory for the lifetime of the object.
struct WordnetDir {
  explicit WordnetDir(const std::string& dir) { setenv("SEQLAB_WORDNET_DIR", dir.c_str(), 1); }
  ~WordnetDir() { unsetenv("SEQLAB_WORDNET_DIR"); }
};

// Runs f, expecting a seqlab::Error whose message contains every needle.
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

const char* kHeader =
    "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    "  2 Princeton University under the following license.  By obtaining, using  \n"
    "  3   \n";

// A fake WordNet: the exact data-file format, with what the parser must get right: the header,
// a hex word count (0a = 10 words), multi-word lemmas, lex_ids, adjective markers, verb frames
// and glosses padded with trailing spaces.
std::string write_fake_wordnet(const std::string& name) {
  const fs::path dir = scratch() / name;
  write(dir / "data.noun",
        std::string(kHeader) +
            "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 ~ 00002137 n 0000 ~ 04431553 n 0000 "
            "| that which is perceived or known or inferred to have its own distinct existence "
            "(living or nonliving)  \n"
            "00002137 03 n 0a a 0 b 1 c 2 d 3 e 4 f 5 g 6 h 7 i 8 j_k a 001 @ 00001740 n 0000 "
            "| ten lemmas; \"the last has a space\"  \n");
  write(dir / "data.verb",
        std::string(kHeader) +
            "00001740 29 v 04 breathe 0 take_a_breath 0 respire 0 suspire 3 002 * 00005041 v 0000 "
            "^ 00004227 v 0103 02 + 02 00 + 08 0a | draw air into, and expel out of, the lungs; "
            "\"I can breathe better when the air is clean\"; \"The patient is respiring\"  \n");
  write(dir / "data.adj",
        std::string(kHeader) +
            "00001740 00 a 01 able 0 001 ! 00002098 a 0101 | (usually followed by `to') having "
            "the necessary means or skill; \"able to swim\"  \n"
            "01937000 00 s 03 galore(ip) 0 in_large_quantity(p) 0 awake(a) 1 000 | in great "
            "numbers; \"bargains galore\"  \n");
  write(dir / "data.adv",
        std::string(kHeader) + "00001740 02 r 01 barely 0 000 | only just; \"he barely won\"  \n");
  return dir.string();
}

// The documents the fake must produce, in order, with their split keys.
const std::vector<std::pair<std::string, std::string>> kFakeDocs = {
    {"n:00001740",
     "entity: that which is perceived or known or inferred to have its own distinct existence "
     "(living or nonliving)"},
    {"n:00002137", "a, b, c, d, e, f, g, h, i, j k: ten lemmas; \"the last has a space\""},
    {"v:00001740",
     "breathe, take a breath, respire, suspire: draw air into, and expel out of, the lungs; \"I "
     "can breathe better when the air is clean\"; \"The patient is respiring\""},
    {"a:00001740",
     "able: (usually followed by `to') having the necessary means or skill; \"able to swim\""},
    {"a:01937000", "galore, in large quantity, awake: in great numbers; \"bargains galore\""},
    {"r:00001740", "barely: only just; \"he barely won\""},
};

}  // namespace

TEST(Corpus, SplitNames) {
  for (Split s : {Split::train, Split::valid, Split::test})
    EXPECT_EQ(parse_split(split_name(s)), s);
  expect_error([] { parse_split("dev"); }, {"dev", "train, valid or test"});
}

TEST(Corpus, FakeWordnetGivesTheExactDocuments) {
  WordnetDir env(write_fake_wordnet("fake"));
  std::map<Split, std::vector<std::string>> want;
  for (const auto& [key, doc] : kFakeDocs) want[expected_split(key)].push_back(doc);
  for (Split s : {Split::train, Split::valid, Split::test})
    EXPECT_EQ(load_corpus("wordnet", s), want[s]) << split_name(s);
}

TEST(Corpus, MalformedWordnetLinesNameTheFileAndLine) {
  const auto dir = write_fake_wordnet("bad");
  WordnetDir env(dir);
  // The word count says 3 words but the line has 2 before its pointer count: the parser reads
  // "001" as a word, "!" as a lex_id, and stops there.
  write(fs::path(dir) / "data.adv",
        std::string(kHeader) + "00001740 02 r 03 barely 0 just 0 001 ! 00002098 r 0101 | x  \n");
  expect_error([] { load_corpus("wordnet", Split::train); }, {"data.adv:4", "lex_id"});
  // A verb line without its frame count.
  write(fs::path(dir) / "data.adv", std::string(kHeader) + "00001740 02 r 01 barely 0 000 | x\n");
  write(fs::path(dir) / "data.verb", std::string(kHeader) + "00001740 29 v 01 go 0 000 | leave\n");
  expect_error([] { load_corpus("wordnet", Split::valid); }, {"data.verb:4", "f_cnt"});
  // No gloss separator.
  write(fs::path(dir) / "data.verb",
        std::string(kHeader) + "00001740 29 v 01 go 0 000 01 + 02 00 leave\n");
  expect_error([] { load_corpus("wordnet", Split::test); }, {"data.verb:4", "'|'"});
}

TEST(Corpus, MissingWordnetFileIsAnError) {
  const auto dir = write_fake_wordnet("missing");
  fs::remove(fs::path(dir) / "data.adv");
  WordnetDir env(dir);
  expect_error([] { load_corpus("wordnet", Split::train); }, {dir + "/data.adv", "wordnet-base"});
}

TEST(Corpus, RealWordnetSplitsAreDisjointDeterministicAndComplete) {
  if (!fs::exists("/usr/share/wordnet/data.noun") && !std::getenv("SEQLAB_WORDNET_DIR"))
    GTEST_SKIP() << "WordNet not installed (apt-get install wordnet-base)";
  std::map<Split, std::vector<std::string>> docs;
  double seconds = 0;
  for (Split s : {Split::train, Split::valid, Split::test}) {
    const auto t0 = std::chrono::steady_clock::now();
    docs[s] = load_corpus("wordnet", s);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("loaded the three WordNet splits in %.3f s\n", seconds);
  EXPECT_LT(seconds, 6.0) << "parsing WordNet should take well under a second per split";
  const size_t n = docs[Split::train].size() + docs[Split::valid].size() + docs[Split::test].size();
  EXPECT_EQ(n, 117659u) << "WordNet 3.0 has 117,659 synsets";
  EXPECT_NEAR(docs[Split::train].size() / double(n), 0.90, 0.01);
  EXPECT_NEAR(docs[Split::valid].size() / double(n), 0.05, 0.01);
  EXPECT_NEAR(docs[Split::test].size() / double(n), 0.05, 0.01);
  // WordNet has no two identical documents, so disjoint texts mean disjoint synsets.
  std::set<std::string> all;
  for (auto& [s, d] : docs) all.insert(d.begin(), d.end());
  EXPECT_EQ(all.size(), n);
  EXPECT_EQ(load_corpus("wordnet", Split::valid), docs[Split::valid]);
  const std::string entity =
      "entity: that which is perceived or known or inferred to have its own distinct existence "
      "(living or nonliving)";
  // data.noun's first synset, in the split its key says, first in it.
  const auto& home = docs[expected_split("n:00001740")];
  ASSERT_FALSE(home.empty());
  EXPECT_EQ(home.front(), entity);
  // Lemmas have their spaces back and no adjective markers (glosses are kept as they are).
  for (const auto& d : all) {
    const auto lemmas = d.substr(0, d.find(": "));
    ASSERT_NE(d.find(": "), std::string::npos) << d;
    ASSERT_EQ(lemmas.find('_'), std::string::npos) << d;
    ASSERT_EQ(lemmas.find("(p)"), std::string::npos) << d;
    ASSERT_EQ(lemmas.find("(a)"), std::string::npos) << d;
    ASSERT_EQ(lemmas.find("(ip)"), std::string::npos) << d;
    ASSERT_NE(d.back(), ' ') << d;
  }
}

TEST(Corpus, TextFilesGiveOneDocumentPerNonEmptyLine) {
  std::string a_text, b_text;
  std::vector<std::string> lines;
  for (int i = 0; i < 300; ++i) {
    const std::string ln = "line " + std::to_string(i) + " of some text";
    lines.push_back(ln);
    (i < 200 ? a_text : b_text) += ln + (i % 7 == 0 ? "\r\n" : "\n") + (i % 5 == 0 ? "\n  \n" : "");
  }
  a_text += "caf\xc3\xa9 cr\xe8me";  // last line without a newline; one Latin-1 byte is fine
  lines.push_back("caf\xc3\xa9 cr\xe8me");
  const auto a = write(scratch() / "a.txt", a_text), b = write(scratch() / "b.txt", b_text);
  // File order: a's lines (with the last one), then b's.
  std::vector<std::string> ordered(lines.begin(), lines.begin() + 200);
  ordered.push_back(lines.back());
  ordered.insert(ordered.end(), lines.begin() + 200, lines.begin() + 300);
  std::map<Split, std::vector<std::string>> want;
  for (const auto& ln : ordered) want[expected_split(ln)].push_back(ln);
  for (Split s : {Split::train, Split::valid, Split::test}) {
    EXPECT_EQ(load_corpus(a + "," + b, s), want[s]) << split_name(s);
    EXPECT_FALSE(want[s].empty());
  }
}

TEST(Corpus, BadFilesAreErrorsNamingTheFile) {
  const auto good = write(scratch() / "good.txt", "hello\nworld\n");
  const auto missing = (scratch() / "nope.txt").string();
  expect_error([&] { load_corpus(good + "," + missing, Split::train); }, {missing});
  const auto empty = write(scratch() / "empty.txt", "\n  \n\r\n");
  expect_error([&] { load_corpus(empty, Split::train); }, {empty, "empty"});
  const auto nul = write(scratch() / "nul.txt", std::string("text\0more\n", 10));
  expect_error([&] { load_corpus(nul, Split::train); }, {nul, "NUL"});
  std::string noise;
  for (int i = 0; i < 1000; ++i) noise.push_back(static_cast<char>(0x80 + (i * 37) % 120));
  const auto bin = write(scratch() / "noise.bin", noise);
  expect_error([&] { load_corpus(bin, Split::train); }, {bin, "UTF-8"});
  expect_error([&] { load_corpus(good + ",", Split::train); }, {"empty path"});
  expect_error([&] { load_corpus("", Split::train); }, {"--corpus"});
}

TEST(Corpus, SourcesMixDirectoriesFilesAndWordnetInOrder) {
  // A directory stands for its *.txt files in name order; other files in it are ignored.
  const auto dir = scratch() / "english";
  std::string all_b, all_a;
  for (int i = 0; i < 300; ++i) {
    all_a += "alpha line " + std::to_string(i) + "\n";
    all_b += "beta line " + std::to_string(i) + "\n";
  }
  write(dir / "b.txt", all_b);
  write(dir / "a.txt", all_a);
  write(dir / "SOURCES", "not a corpus file\n");
  const auto extra = write(scratch() / "extra.txt", "gamma one\ngamma two\ngamma three\n");
  for (auto split : {Split::train, Split::valid, Split::test}) {
    const auto from_dir = load_corpus(dir.string() + "," + extra, split);
    const auto from_files =
        load_corpus((dir / "a.txt").string() + "," + (dir / "b.txt").string() + "," + extra, split);
    EXPECT_EQ(from_dir, from_files);
  }
  const auto train = load_corpus(dir.string(), Split::train);
  ASSERT_FALSE(train.empty());
  EXPECT_EQ(train.front().rfind("alpha", 0), 0u) << "a.txt comes first";
  for (const auto& d : train) EXPECT_EQ(d.find("not a corpus"), std::string::npos);
  // WordNet mixes in at its place in the list.
  const auto wn = load_corpus("wordnet", Split::valid);
  const auto mixed = load_corpus("wordnet," + dir.string(), Split::valid);
  ASSERT_GT(mixed.size(), wn.size());
  EXPECT_TRUE(std::equal(wn.begin(), wn.end(), mixed.begin()));
  expect_error([&] { load_corpus((scratch() / "empty_dir").string() + "/", Split::train); },
               {"cannot be opened"});
  fs::create_directories(scratch() / "no_txt");
  expect_error([&] { load_corpus((scratch() / "no_txt").string(), Split::train); },
               {"holds no *.txt files"});
}
