// Fuzzes the BPE tokenizer's file reader (BpeTokenizer::from_texts, what load() runs on
// vocab.json + merges.txt) and the tokenizer itself on arbitrary bytes.
//
// The first input byte picks the mode:
//   even  raw: the rest is "<vocab.json>\0<merges.txt>\0<text>", fed to the reader as they are
//         (mostly error paths: malformed JSON, bad ids, bad merge lines);
//   odd   built: a valid vocabulary (the 256 byte tokens, <|endoftext|>, extra tokens from the
//         input) and merges chosen by the input, written as files and read back, then the rest of
//         the input is encoded and decoded (the BPE loop, the pre-tokenizer, the word cache).
// Oracles on every tokenizer that loads: decode(encode(text)) == text, every id in range, and the
// heap-based bpe_piece equals GPT-2's reference loop on every short piece.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/pretokenize.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <nlohmann/json.hpp>

#include <set>

using namespace seqlab;

namespace {

void check_tokenizer(const BpeTokenizer& tok, std::string_view text) {
  const auto ids = tok.encode(text);
  for (int64_t id : ids)
    if (id < 0 || id >= tok.vocab_size()) fuzz::finding(fmt::format("encode gave id {}", id));
  if (tok.decode(ids) != text) fuzz::finding("decode(encode(text)) != text");
  Pretokenizer it(text);
  std::string_view piece;
  while (it.next(&piece))
    if (piece.size() <= 256 && tok.bpe_piece(piece) != tok.bpe_piece_reference(piece))
      fuzz::finding("bpe_piece differs from bpe_piece_reference");
}

void raw_mode(std::string_view rest) {
  const size_t a = std::min(rest.find('\0'), rest.size());
  const std::string_view vocab = rest.substr(0, a);
  rest.remove_prefix(std::min(a + 1, rest.size()));
  const size_t b = std::min(rest.find('\0'), rest.size());
  const std::string_view merges = rest.substr(0, b);
  const std::string_view text = rest.substr(std::min(b + 1, rest.size()));
  std::unique_ptr<BpeTokenizer> tok;
  try {
    tok = BpeTokenizer::from_texts(vocab, merges, "vocab.json", "merges.txt", "fuzz");
  } catch (const Error&) {
    return;
  }
  check_tokenizer(*tok, text);
}

void built_mode(FuzzedDataProvider& in) {
  // Token strings as vocab.json spells them, without repeats.
  std::vector<std::string> spelled;
  std::set<std::string> seen;
  auto add = [&](const std::string& s) {
    if (seen.insert(s).second) spelled.push_back(s);
  };
  for (int c = 0; c < 256; ++c) add(bytes_to_token_string(std::string(1, static_cast<char>(c))));
  add("<|endoftext|>");
  const int n_extra = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < n_extra; ++i) {  // added tokens, spelled outside the byte table or not
    const std::string s = in.ConsumeRandomLengthString(16);
    if (!s.empty() && s.find_first_of(" \n\r") == std::string::npos) add(s);
  }
  std::string merges = in.ConsumeBool() ? "#version: 0.2\n" : "";
  const int n_merges = in.ConsumeIntegralInRange(0, 64);
  for (int i = 0; i < n_merges; ++i) {
    const size_t l = in.ConsumeIntegralInRange<size_t>(0, spelled.size() - 1);
    const size_t r = in.ConsumeIntegralInRange<size_t>(0, spelled.size() - 1);
    // Merges of byte-table tokens only: their concatenation spells the concatenated bytes.
    std::string tl, tr;
    if (!token_string_to_bytes(spelled[l], &tl) || !token_string_to_bytes(spelled[r], &tr))
      continue;
    add(spelled[l] + spelled[r]);
    merges += spelled[l] + " " + spelled[r] + (in.ConsumeBool() ? "\n" : "\r\n");
  }
  // Ids: a rotation of the insertion order, so byte tokens need not come first.
  const size_t shift = in.ConsumeIntegralInRange<size_t>(0, spelled.size() - 1);
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < spelled.size(); ++i) vocab[spelled[i]] = (i + shift) % spelled.size();
  const std::string vocab_text =
      vocab.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::unique_ptr<BpeTokenizer> tok;
  try {
    tok = BpeTokenizer::from_texts(vocab_text, merges, "vocab.json", "merges.txt", "fuzz");
  } catch (const Error&) {
    return;  // e.g. an added token that is not valid UTF-8 was replaced, so it clashes
  }
  check_tokenizer(*tok, in.ConsumeRemainingBytesAsString());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string tiny_vocab = [] {
    nlohmann::json v = nlohmann::json::object();
    for (int c = 0; c < 256; ++c) v[bytes_to_token_string(std::string(1, char(c)))] = c;
    v["<|endoftext|>"] = 256;
    v["he"] = 257;
    v["ll"] = 258;
    v["hell"] = 259;
    v["Ġw"] = 260;
    return v.dump();
  }();
  const std::string raw = std::string("\x00", 1) + tiny_vocab + std::string("\0", 1) +
                          "#version: 0.2\nh e\nl l\nhe ll\nĠ w\n" + std::string("\0", 1) +
                          "hello world, hello!  123 don't\n\t\xff\xfe";
  std::string built = "\x01\x02\x03\x04";
  for (int i = 0; i < 40; ++i) built += static_cast<char>(i * 37 + 11);
  built += "The quick brown fox's 1234 jumps   over \xe2\x82\xac\xf0\x9f\x98\x80 <|endoftext|>";
  fuzz::maybe_write_seeds({raw, built, std::string("\x03", 1) + "aaaaaaaaaaaa bbbbbbbb 99999999"});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    raw_mode(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    built_mode(in);
  }
  return 0;
}
