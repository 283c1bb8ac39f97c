// `seqlab tokenizer train | encode | decode` end to end: the binary (env SEQLAB_BIN), stdin and
// stdout as a user pipes them, exit codes and error lines.
#include "cli_testing.h"
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("seqlab_test_tokenizer_cli." + std::to_string(getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

void expect_error(const std::string& args, const std::string& input, const std::string& needle) {
  seqlab::testing::expect_cli_error(args, needle, input);
}

}  // namespace

TEST(TokenizerCli, ByteEncodeDecode) {
  seqlab::testing::CliRun r =
      seqlab::testing::run_seqlab("tokenizer encode --tokenizer byte", "hi\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "104 105 10\n");
  r = seqlab::testing::run_seqlab("tokenizer decode --tokenizer byte", "104 105\n 10 \n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "hi\n");
}

TEST(TokenizerCli, Gpt2) {
  seqlab::testing::CliRun r =
      seqlab::testing::run_seqlab("tokenizer encode --tokenizer gpt2", "Hello world");
  ASSERT_EQ(r.code, 0) << r.err;  // names scripts/setup.sh when GPT-2's files are missing
  EXPECT_EQ(r.out, "15496 995\n");
  r = seqlab::testing::run_seqlab("tokenizer decode --tokenizer gpt2", "15496 995");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world");
}

TEST(TokenizerCli, TrainThenEncodeAndDecodeAnyBytes) {
  // A corpus file: one document per line.
  std::mt19937 rng(1);
  const std::vector<std::string> words = {"the",      "tokenizer", "learns", "merges", "of",
                                          "frequent", "pairs",     "and",    "bytes",  "café"};
  std::string corpus;
  for (int line = 0; line < 300; ++line) {
    for (int k = 0; k < 12; ++k) corpus += (k ? " " : "") + words[rng() % words.size()];
    corpus += ".\n";
  }
  const auto file = scratch() / "corpus.txt", out = scratch() / "tok";
  spit(file, corpus);
  seqlab::testing::CliRun r = seqlab::testing::run_seqlab(
      "tokenizer train --corpus " + file.string() + " --vocab-size 300 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // logs go to stderr
  EXPECT_NE(r.err.find("300 tokens"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(out / "vocab.json") && fs::exists(out / "merges.txt"));

  const std::string text = "the tokenizer learns\n\xff\xfe bytes \xe2\x82 caf\xc3\xa9!";
  r = seqlab::testing::run_seqlab("tokenizer encode -q --tokenizer " + out.string(), text);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string ids = r.out;
  EXPECT_LT(std::count(ids.begin(), ids.end(), ' ') + 1, static_cast<long>(text.size()));
  r = seqlab::testing::run_seqlab("tokenizer decode --tokenizer bpe:" + out.string(), ids);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, text);
}

// Each run loads LibTorch (~0.9 s), so only the CLI's own errors are here; the library's are
// in test_bpe_tokenizer.cpp.
TEST(TokenizerCli, Errors) {
  expect_error("tokenizer decode --tokenizer byte", "104 abc", "'abc' is not a token id");
  const auto out = scratch() / "never";
  expect_error(
      "tokenizer train --corpus /nonexistent/seqlab.txt --vocab-size 300 --out " + out.string(), "",
      "/nonexistent/seqlab.txt");
  expect_error("tokenizer train --corpus wordnet --vocab-size 100 --out " + out.string(), "",
               "--vocab-size 100 is too small");
  EXPECT_FALSE(fs::exists(out));
}
