// Byte-level BPE (src/seqlab/text/bpe_tokenizer.h) against GPT-2 itself: ids computed by the
// reference encoder (npm gpt-3-encoder, tests/data/make_gpt2_encodings.js), lossless round trips
// on any bytes, the fast merge loop against GPT-2's plain one, and every file error.
#include <gtest/gtest.h>

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/pretokenize.h"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

// GPT-2, loaded once. Missing files are a failure, not a skip: CI must have them.
const BpeTokenizer* gpt2() {
  static const std::unique_ptr<BpeTokenizer> tok = []() -> std::unique_ptr<BpeTokenizer> {
    const fs::path dir = gpt2_dir();
    if (!fs::exists(dir / "encoder.json") || !fs::exists(dir / "vocab.bpe")) return nullptr;
    return BpeTokenizer::load(dir.string(), "gpt2");
  }();
  return tok.get();
}
#define REQUIRE_GPT2()                                                                           \
  ASSERT_NE(gpt2(), nullptr) << "GPT-2's encoder.json + vocab.bpe are missing in " << gpt2_dir() \
                             << ": run scripts/setup.sh"

fs::path data_dir() {
  const char* src = std::getenv("SEQLAB_SOURCE_DIR");
  return src ? fs::path(src) / "tests" / "data" : fs::path(__FILE__).parent_path() / "data";
}

fs::path scratch(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("seqlab_test_bpe." + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

std::string ids_str(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += " " + std::to_string(x);
  return s;
}

// A random byte string: uniform bytes (mostly invalid UTF-8) or a mix of valid and broken
// fragments.
std::string random_bytes(std::mt19937& rng, bool uniform) {
  static const std::vector<std::string> frags = {
      "the",      " cat",  "'s",           " ",
      "  ",       "\n",    "\r\n",         "1",
      "23",       "é",     "中文",         "😀",
      "!",        "...",   "\xff",         "\xc3",
      "\xe2\x82", "\x80",  "\xed\xa0\x80", "\xf4\x90\x80\x80",
      "\t",       "\u00a0"};
  std::string s;
  const int len = static_cast<int>(rng() % 60);
  for (int i = 0; i < len; ++i) {
    if (uniform)
      s.push_back(static_cast<char>(rng() & 0xFF));
    else
      s += frags[rng() % frags.size()];
  }
  return s;
}

std::string expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
    return e.what();
  }
  ADD_FAILURE() << "no seqlab::Error thrown; expected one containing: " << needle;
  return "";
}

}  // namespace

TEST(Gpt2, HelloWorld) {
  REQUIRE_GPT2();
  const auto& t = *gpt2();
  EXPECT_EQ(t.encode("Hello world"), (std::vector<int64_t>{15496, 995}));
  EXPECT_EQ(t.vocab_size(), 50257);
  EXPECT_EQ(t.eos_id(), 50256);
  EXPECT_EQ(t.decode({15496, 995}), "Hello world");
  EXPECT_EQ(t.decode({t.eos_id()}), "<|endoftext|>");
  EXPECT_EQ(t.spec(), "gpt2");
}

TEST(Gpt2, MatchesTheReferenceEncoder) {
  REQUIRE_GPT2();
  const auto path = data_dir() / "gpt2_encodings.jsonl";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string text = j.at("text");
    const std::vector<int64_t> want = j.at("ids");
    const auto got = gpt2()->encode(text);
    EXPECT_EQ(got, want) << "text: " << j.at("text").dump() << "\n got:" << ids_str(got)
                         << "\nwant:" << ids_str(want);
    EXPECT_EQ(gpt2()->decode(want), text);
    ++n;
  }
  EXPECT_GE(n, 30);
}

TEST(Gpt2, RoundTripsAnyBytes) {
  REQUIRE_GPT2();
  std::mt19937 rng(1);
  for (int trial = 0; trial < 3000; ++trial) {
    const std::string s = random_bytes(rng, trial % 2 == 0);
    const auto ids = gpt2()->encode(s);
    ASSERT_EQ(gpt2()->decode(ids), s) << "ids:" << ids_str(ids);
    for (auto id : ids) ASSERT_TRUE(id >= 0 && id < gpt2()->eos_id());
  }
  // Every single byte, and the 256 bytes in a row.
  std::string all;
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    ASSERT_EQ(gpt2()->decode(gpt2()->encode(s)), s);
    all += s;
  }
  EXPECT_EQ(gpt2()->decode(gpt2()->encode(all)), all);
}

TEST(Gpt2, FastMergeLoopEqualsGpt2Loop) {
  REQUIRE_GPT2();
  const auto& t = *gpt2();
  std::mt19937 rng(2);
  std::vector<std::string> pieces = {
      "Hello", " world",    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", " antidisestablishmentarianism",
      "     ", "!!!!!!!!!!"};
  for (int trial = 0; trial < 300; ++trial) {
    for (const auto& p : pretokenize(random_bytes(rng, trial % 3 == 0))) pieces.push_back(p);
  }
  // Long runs: where a quadratic loop would hurt.
  pieces.push_back(std::string(2000, ' '));
  std::string digits, letters;
  for (int i = 0; i < 2000; ++i) {
    digits.push_back(static_cast<char>('0' + rng() % 10));
    letters.push_back(static_cast<char>('a' + rng() % 26));
  }
  pieces.push_back(digits);
  pieces.push_back(letters);
  for (const auto& p : pieces) ASSERT_EQ(t.bpe_piece(p), t.bpe_piece_reference(p)) << p;
}

TEST(Gpt2, OneHugeWordIsFast) {
  REQUIRE_GPT2();
  // 256 KB without a break is one piece: merged in O(n log n), where GPT-2's loop is quadratic.
  // CPU time, not wall time: the machine may be busy.
  std::mt19937 rng(3);
  std::string s;
  for (int i = 0; i < (1 << 18); ++i) s.push_back(static_cast<char>('a' + rng() % 26));
  const std::clock_t c0 = std::clock();
  const auto ids = gpt2()->encode(s);
  const double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  EXPECT_EQ(gpt2()->decode(ids), s);
  EXPECT_LT(cpu_s, 2.0);
}

TEST(Gpt2, DecodeRejectsIdsOutOfRange) {
  REQUIRE_GPT2();
  expect_error([] { gpt2()->decode({15496, 50257}); }, "token id 50257 is outside [0, 50257)");
  expect_error([] { gpt2()->decode({-1}); }, "token id -1 is outside");
}

TEST(Gpt2, MakeTokenizerSpecs) {
  REQUIRE_GPT2();
  const std::string dir = gpt2_dir();
  const auto by_name = make_tokenizer("gpt2");
  EXPECT_EQ(by_name->spec(), "gpt2");
  EXPECT_EQ(by_name->encode("Hello world"), (std::vector<int64_t>{15496, 995}));
  // A plain directory; its spec is "bpe:<absolute directory>", which loads back.
  const auto by_dir = make_tokenizer(dir);
  EXPECT_EQ(by_dir->spec(), "bpe:" + fs::absolute(dir).lexically_normal().string());
  const auto by_spec = make_tokenizer(by_dir->spec());
  EXPECT_EQ(by_spec->encode("Hello world"), (std::vector<int64_t>{15496, 995}));
  EXPECT_EQ(by_spec->eos_id(), 50256);
}

TEST(Gpt2, MissingFilesSayToRunSetup) {
  const auto empty = scratch("empty_gpt2");
  const char* old = std::getenv("SEQLAB_GPT2_DIR");
  const std::string saved = old ? old : "";
  setenv("SEQLAB_GPT2_DIR", empty.c_str(), 1);
  expect_error([] { make_tokenizer("gpt2"); }, "run scripts/setup.sh");
  if (old)
    setenv("SEQLAB_GPT2_DIR", saved.c_str(), 1);
  else
    unsetenv("SEQLAB_GPT2_DIR");
}

// A small hand-made tokenizer: bytes, then h+e, l+l, he+ll, hell+o, Ġ+w, and <|endoftext|>.
struct Toy {
  std::vector<std::string> tokens;  // token strings, id order
  std::string merges = "#version: 0.2\nh e\nl l\nhe ll\nhell o\nĠ w\n";
  Toy() {
    for (int b = 0; b < 256; ++b)
      tokens.push_back(bytes_to_token_string(std::string(1, static_cast<char>(b))));
    for (const char* t : {"he", "ll", "hell", "hello", "Ġw", "<|endoftext|>"}) tokens.push_back(t);
  }
  std::string vocab_json() const {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < tokens.size(); ++i) j[tokens[i]] = i;
    return j.dump();
  }
  fs::path write_to(const std::string& name) const {
    const auto d = scratch(name);
    write(d / "vocab.json", vocab_json());
    write(d / "merges.txt", merges);
    return d;
  }
};

TEST(Bpe, HandMadeTokenizer) {
  Toy toy;
  const auto t = make_tokenizer(toy.write_to("toy").string());
  EXPECT_EQ(t->vocab_size(), 262);
  EXPECT_EQ(t->eos_id(), 261);
  // "hello" -> h e l l o -> he l l o -> he ll o -> hell o -> hello; " world" -> Ġw o r l d.
  EXPECT_EQ(t->encode("hello world"), (std::vector<int64_t>{259, 260, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(t->encode("hell"), (std::vector<int64_t>{258}));
  EXPECT_EQ(t->encode("lll"), (std::vector<int64_t>{257, 'l'}));  // left to right
  EXPECT_EQ(t->decode({259, 260, 'o'}), "hello wo");
  // GPT-2's own file names work too, and a #version line is optional.
  const auto d = scratch("toy_gpt2_names");
  write(d / "encoder.json", toy.vocab_json());
  write(d / "vocab.bpe", "h e\nl l\nhe ll\nhell o\nĠ w\n");
  EXPECT_EQ(make_tokenizer("bpe:" + d.string())->encode("hello"), (std::vector<int64_t>{259}));
}

TEST(Bpe, FileErrorsNameTheFileAndTheProblem) {
  const Toy good;
  expect_error([] { make_tokenizer("bpe:/nonexistent/seqlab_tok"); }, "does not exist");
  expect_error([] { make_tokenizer("no_such_tokenizer"); },
               "unknown tokenizer 'no_such_tokenizer'");
  expect_error([] { make_tokenizer("bpe:"); }, "expected bpe:<directory>");
  const auto empty = scratch("err_empty");
  expect_error([&] { make_tokenizer(empty.string()); }, "no tokenizer files");

  const auto only_vocab = scratch("err_only_vocab");
  write(only_vocab / "vocab.json", good.vocab_json());
  expect_error([&] { make_tokenizer(only_vocab.string()); }, "merges.txt is missing");

  // Each case: a change to the good files, and what the error must say.
  struct Case {
    std::string vocab, merges, needle;
  };
  auto vocab_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(good.vocab_json());
    edit(j);
    return j.dump();
  };
  const std::vector<Case> cases = {
      {"{\"a\": 0,", good.merges, "vocab.json: malformed JSON"},
      {"[1, 2]", good.merges, "vocab.json: expected a JSON object"},
      {vocab_with([](auto& j) { j["he"] = "256"; }), good.merges,
       "the id of 'he' is not an integer"},
      {vocab_with([](auto& j) { j["he"] = 70000; }), good.merges,
       "vocab.json: the id 70000 of 'he' is outside [0, 262)"},
      {vocab_with([](auto& j) { j["he"] = -3; }), good.merges, "the id -3 of 'he' is outside"},
      {vocab_with([](auto& j) { j["he"] = 257; }), good.merges, "share the id 257"},
      {vocab_with([](auto& j) {
         j.erase("!");
         j["zz"] = 33;
       }),
       good.merges, "vocab.json: no token for byte 0x21 ('!')"},
      {vocab_with([](auto& j) { j.erase("<|endoftext|>"); }), good.merges,
       "vocab.json: no <|endoftext|> token"},
      {good.vocab_json(), "#version: 0.2\nh e\nq zz\n", "merges.txt:3: 'zz' is not a token of"},
      {good.vocab_json(), "h e\nh o\n", "merges.txt:2: the merge result 'ho' is not a token of"},
      {good.vocab_json(), "h e\nh e l\n",
       "merges.txt:2: expected two tokens separated by one space"},
      {good.vocab_json(), "h e\nhe\n", "merges.txt:2: expected two tokens"},
  };
  int k = 0;
  for (const auto& c : cases) {
    const auto d = scratch("err_" + std::to_string(k++));
    write(d / "vocab.json", c.vocab);
    write(d / "merges.txt", c.merges);
    const std::string msg = expect_error([&] { make_tokenizer(d.string()); }, c.needle);
    EXPECT_NE(msg.find(d.string()), std::string::npos) << "the message names no file: " << msg;
  }
}

TEST(Bpe, ByteTableIsGpt2s) {
  // bytes_to_unicode(): '!' stays '!', space is Ġ (U+0120), newline Ċ (U+010A), 0x00 is Ā.
  EXPECT_EQ(gpt2_byte_to_unicode()['!'], U'!');
  EXPECT_EQ(gpt2_byte_to_unicode()[' '], U'\u0120');
  EXPECT_EQ(gpt2_byte_to_unicode()['\n'], U'\u010a');
  EXPECT_EQ(gpt2_byte_to_unicode()[0], U'\u0100');
  EXPECT_EQ(gpt2_byte_to_unicode()[0xAD], U'\u0143');
  std::string all, back;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  ASSERT_TRUE(token_string_to_bytes(bytes_to_token_string(all), &back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(token_string_to_bytes("<|im_start|>\u4e2d", &back));
}
