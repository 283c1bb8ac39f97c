// Fuzzes the Hugging Face tokenizer.json reader (HfTokenizer::from_texts), its regex engine
// (hf::Regex) and its Unicode normalization (hf::nfc / nfd).
//
// The first input byte picks the mode (value % 4):
//   0  raw: the rest is "<tokenizer.json>\0<tokenizer_config.json>\0<text>", read as they are
//      (mostly error paths), then the text encoded and decoded if the files loaded;
//   1  regex: "<pattern>\0<text>": the pattern compiled (or refused) and matched over the text;
//   2  built: a valid byte-level tokenizer.json built from the input (merges, added tokens with
//      every flag, a normalizer, a pre-tokenizer from shipped patterns, a post-processor), then
//      the rest of the input encoded and decoded;
//   3  normalization: the rest as text.
// Oracles: ids in [0, vocab_size); decode(encode(text)) == the normalized text when nothing in
// the pipeline drops or adds characters; regex matches ordered, non-empty, inside the text;
// NFC and NFD idempotent and canonically equivalent (nfc(nfd(x)) == nfc(x), nfd(nfc(x)) ==
// nfd(x)); seqlab::Error is the only exception.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/hf_regex.h"
#include "seqlab/text/hf_tokenizer.h"
#include "seqlab/text/hf_unicode.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>

#include <set>

using namespace seqlab;
using nlohmann::json;

namespace {

void check_ids(const HfTokenizer& tok, const std::vector<int64_t>& ids) {
  for (int64_t id : ids)
    if (id < 0 || id >= tok.vocab_size()) fuzz::finding(fmt::format("encode gave id {}", id));
}

std::pair<std::string_view, std::string_view> cut(std::string_view s) {
  const size_t a = std::min(s.find('\0'), s.size());
  return {s.substr(0, a), s.substr(std::min(a + 1, s.size()))};
}

void raw_mode(std::string_view rest) {
  const auto [tok_json, rest2] = cut(rest);
  const auto [config, text] = cut(rest2);
  std::unique_ptr<HfTokenizer> tok;
  try {
    tok = HfTokenizer::from_texts(tok_json, config, "tokenizer.json", "fuzz");
  } catch (const Error&) {
    return;
  }
  try {
    const auto ids = tok->encode(text);
    check_ids(*tok, ids);
    tok->decode(ids);
  } catch (const Error&) {
    // a missing unk token, a regex over its backtracking budget
  }
}

void regex_mode(std::string_view rest) {
  const auto [pattern, text] = cut(rest);
  std::unique_ptr<hf::Regex> re;
  try {
    re = std::make_unique<hf::Regex>(pattern, "fuzz");
  } catch (const Error&) {
    return;
  }
  const std::u32string units = hf::to_units(text);
  try {
    size_t prev = 0;
    for (const auto& [b, e] : re->find_all(units)) {
      if (b < prev || e <= b || e > units.size()) fuzz::finding("regex match out of order");
      prev = e;
    }
  } catch (const Error&) {
    // over the backtracking budget
  }
}

void normalization_mode(std::string_view text) {
  const std::string c = hf::nfc(text), d = hf::nfd(text);
  if (hf::nfc(c) != c || hf::nfd(d) != d) fuzz::finding("NFC or NFD is not idempotent");
  if (hf::nfc(d) != c || hf::nfd(c) != d) fuzz::finding("NFC and NFD disagree");
}

// Split patterns of shipped files (Llama 3, Qwen2, GPT-4o / o200k, DeepSeek-V3) and a few others.
const char* const kPatterns[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'"
    "s|"
    "'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "[\\p{P}\\p{S}]+|[一-龥぀-ゟ゠-ヿ]+",
    "\\s+",
    "a+?b??",
};

json built_tokenizer(FuzzedDataProvider& in, bool* lossless) {
  // Vocabulary: the 256 byte tokens (ids rotated), then merge results, then added tokens.
  std::vector<std::string> spelled;
  std::set<std::string> seen;
  auto add = [&](const std::string& s) {
    if (seen.insert(s).second) spelled.push_back(s);
  };
  for (int c = 0; c < 256; ++c) add(bytes_to_token_string(std::string(1, static_cast<char>(c))));
  json merges = json::array();
  const int n_merges = in.ConsumeIntegralInRange(0, 48);
  for (int i = 0; i < n_merges; ++i) {
    const std::string l = spelled[in.ConsumeIntegralInRange<size_t>(0, spelled.size() - 1)];
    const std::string r = spelled[in.ConsumeIntegralInRange<size_t>(0, spelled.size() - 1)];
    add(l + r);
    if (in.ConsumeBool())
      merges.push_back(l + " " + r);
    else
      merges.push_back(json::array({l, r}));
  }
  const size_t shift = in.ConsumeIntegralInRange<size_t>(0, 255);
  json vocab = json::object();
  for (size_t i = 0; i < spelled.size(); ++i) vocab[spelled[i]] = i < 256 ? (i + shift) % 256 : i;
  json added = json::array();
  const int n_added = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < n_added; ++i) {
    json t = {{"id", spelled.size() + i},        {"content", in.ConsumeRandomLengthString(12)},
              {"special", in.ConsumeBool()},     {"normalized", in.ConsumeBool()},
              {"single_word", in.ConsumeBool()}, {"lstrip", in.ConsumeBool()},
              {"rstrip", in.ConsumeBool()}};
    *lossless = *lossless && !t["lstrip"].get<bool>() && !t["rstrip"].get<bool>();
    added.push_back(t);
  }
  json normalizer = nullptr;
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 1:
      normalizer = {{"type", "NFC"}};
      break;
    case 2:
      normalizer = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "NFC"}}}}};
      break;
  }
  const bool prefix = in.ConsumeBool();
  *lossless = *lossless && !prefix;
  json steps = json::array();
  if (in.ConsumeBool()) {
    const char* behaviors[] = {"Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous",
                               "Removed"};
    const int b = in.ConsumeIntegralInRange(0, 4);
    const bool invert = in.ConsumeBool();
    *lossless = *lossless && b != 4;
    steps.push_back({{"type", "Split"},
                     {"pattern", {{"Regex", kPatterns[in.ConsumeIntegralInRange(0, 5)]}}},
                     {"behavior", behaviors[b]},
                     {"invert", invert}});
  }
  if (in.ConsumeBool())
    steps.push_back({{"type", "Digits"}, {"individual_digits", in.ConsumeBool()}});
  steps.push_back(
      {{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"use_regex", in.ConsumeBool()}});
  if (in.ConsumeBool()) steps.push_back({{"type", "Punctuation"}});
  json post = nullptr;
  if (in.ConsumeBool())
    post = {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "b"}}}}, {{"Sequence", {{"id", "A"}}}}}},
            {"special_tokens", {{"b", {{"ids", {in.ConsumeIntegralInRange(0, 255)}}}}}}};
  return {{"added_tokens", added},
          {"normalizer", normalizer},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", steps}}},
          {"post_processor", post},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", merges},
            {"ignore_merges", in.ConsumeBool()}}}};
}

void built_mode(FuzzedDataProvider& in) {
  bool lossless = true;
  const json j = built_tokenizer(in, &lossless);
  std::unique_ptr<HfTokenizer> tok;
  try {
    tok = HfTokenizer::from_texts(j.dump(-1, ' ', false, json::error_handler_t::replace), "",
                                  "tokenizer.json", "fuzz");
  } catch (const Error&) {
    return;  // e.g. an added token whose content is invalid UTF-8 was replaced and clashes
  }
  const std::string text = in.ConsumeRemainingBytesAsString();
  std::vector<int64_t> ids;
  try {
    ids = tok->encode(text, {false, false});
  } catch (const Error&) {
    return;  // a regex over its backtracking budget
  }
  check_ids(*tok, ids);
  const std::string normalized = j["normalizer"].is_null() ? text : hf::nfc(text);
  // Added tokens decode to their content, which a normalizer may have changed: check the round
  // trip only without them.
  if (lossless && j["added_tokens"].empty() && tok->decode(ids) != normalized)
    fuzz::finding("decode(encode(text)) != the normalized text");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string z("\0", 1);
  json tiny = {{"added_tokens", {{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}}}},
               {"pre_tokenizer", {{"type", "ByteLevel"}}},
               {"decoder", {{"type", "ByteLevel"}}},
               {"model", {{"type", "BPE"}, {"vocab", json::object()}, {"merges", {"h e"}}}}};
  for (int c = 0; c < 256; ++c)
    tiny["model"]["vocab"][bytes_to_token_string(std::string(1, char(c)))] = c;
  tiny["model"]["vocab"]["he"] = 257;
  tiny["model"]["vocab"]["<|endoftext|>"] = 256;
  std::string built = "\x02";
  for (int i = 0; i < 48; ++i) built += static_cast<char>(i * 53 + 7);
  built +=
      "Hello  world, it's 12345 <|endoftext|> e\xcc\x81t\xc3\xa9 \xff\xfe \xe4\xb8\xad\xe6\x96\x87";
  fuzz::maybe_write_seeds({
      "\x00" + tiny.dump() + z + "{\"eos_token\": \"<|endoftext|>\"}" + z + "hello<|endoftext|>",
      "\x01" + std::string(kPatterns[0]) + z + "Hello world's 1234567\n\n  x",
      "\x01" + std::string(kPatterns[2]) + z + "HelloWorld CAPS'S\r\n/",
      built,
      "\x03"
      "e\xcc\x81\xcc\xa3 \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8 \xe0\xa5\x98 \xff",
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      raw_mode(rest);
      break;
    case 1:
      regex_mode(rest);
      break;
    case 2: {
      FuzzedDataProvider in(data + 1, size - 1);
      built_mode(in);
      break;
    }
    default:
      normalization_mode(rest);
  }
  return 0;
}
