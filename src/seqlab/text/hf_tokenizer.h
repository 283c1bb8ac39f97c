// Hugging Face tokenizer.json files of byte-level BPE models: GPT-2, GPT-NeoX / Pythia, Llama 3,
// Qwen2 / Qwen3, SmolLM, DeepSeek-V3, GPT-4o-style (o200k) files and the like.
//
// The pipeline is the Rust tokenizers library's (docs/tokenizers.md has the full list of what is
// read and what is refused):
//   1. added tokens (tokenizer.json "added_tokens") are found first, leftmost-longest, and are
//      never split: those with normalized=false in the raw text, the others in the normalized text;
//      single_word, lstrip and rstrip are honoured;
//   2. the normalizer (null, NFC, NFD, or a Sequence of them);
//   3. the pre-tokenizer: Sequence, Split (Regex or String pattern, every behavior, invert),
//      ByteLevel (add_prefix_space, use_regex = GPT-2's pattern), Digits, Punctuation; regexes run
//      on hf_regex.h's engine, which refuses syntax it does not implement with an error naming the
//      file and the pattern;
//   4. BPE over the bytes of each piece (merges as "a b" strings or [a, b] pairs; ignore_merges,
//      unk_token, fuse_unk), cached per piece;
//   5. the post-processor's single-sequence template (TemplateProcessing, RobertaProcessing,
//      BertProcessing, ByteLevel = nothing, or a Sequence of them): e.g. Llama 3.1 prepends
//      <|begin_of_text|>.
// Decoding is the ByteLevel decoder's: each vocabulary token's characters map back to bytes
// through GPT-2's byte table (an entry spelled outside the table gives its own text), and an added
// token gives its content as written, as transformers does. Nothing is skipped, so special tokens
// decode to their content; the bytes are returned as they are (no U+FFFD replacement).
// decode(encode(s, {false, true})) == s for any bytes s when the normalizer leaves s alone and the
// vocabulary has all 256 bytes.
//
// tokenizer_config.json beside tokenizer.json, when present, names bos_token and eos_token (a
// string or {"content": ...}). eos_id() comes from it, else from an added token or vocabulary
// entry <|endoftext|>, <|end_of_text|>, </s> or <eos>; without one it throws (only when asked).
//
// Refused with seqlab::Error naming the file: another model type (WordPiece, Unigram / the
// SentencePiece models such as Llama 2's), a BPE that is not byte-level (no ByteLevel
// pre-tokenizer or decoder), continuing_subword_prefix / end_of_word_suffix, byte_fallback,
// dropout, normalizers other than the above (NFKC, Lowercase, ...), other pre-tokenizers and
// post-processors, a template with two sequences ($B) in "single", malformed JSON.
#pragma once

#include "seqlab/text/tokenizer.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

struct HfEncodeOptions {
  // Apply the post-processor's template (Llama 3's <|begin_of_text|>, ...). HF's
  // add_special_tokens.
  bool add_special_tokens = true;
  // Read special added tokens in the text as text (HF's split_special_tokens): corpus text that
  // happens to contain "<|endoftext|>" is then encoded as ordinary characters.
  bool split_special_tokens = false;
};

class HfTokenizer : public Tokenizer {
 public:
  // `path`: a tokenizer.json file, or a directory holding one (tokenizer_config.json is read from
  // beside it when present). `spec` is what spec() returns. Loading Llama 3's 9 MB file takes
  // about a second.
  static std::unique_ptr<HfTokenizer> load(const std::string& path, const std::string& spec);
  // What load() does once the files are read: `config_json` empty means no tokenizer_config.json.
  // `source` names the tokenizer.json in errors. The fuzz target calls it directly.
  static std::unique_ptr<HfTokenizer> from_texts(std::string_view tokenizer_json,
                                                 std::string_view config_json,
                                                 const std::string& source,
                                                 const std::string& spec);
  ~HfTokenizer() override;

  std::string spec() const override;
  // One more than the largest id of the vocabulary and the added tokens.
  int64_t vocab_size() const override;
  // encode(text, {}) : added tokens recognized, the post-processor applied, as HF's
  // tokenizer.encode(text). Thread-safe.
  std::vector<int64_t> encode(std::string_view text) const override;
  std::vector<int64_t> encode(std::string_view text, const HfEncodeOptions& opt) const;
  // Corpus text: encode(text, {false, true}), no template and special-token strings as text.
  std::vector<int64_t> encode_plain(std::string_view text) const override {
    return encode(text, HfEncodeOptions{false, true});
  }
  // Ids outside [0, vocab_size) are an error; an id inside that has no token (a gap in the
  // vocabulary) gives nothing, as in the Rust library.
  std::string decode(const std::vector<int64_t>& ids) const override;
  // Throws seqlab::Error when the files name no end-of-text token.
  int64_t eos_id() const override;
  // tokenizer_config.json's bos_token, or -1.
  int64_t bos_id() const;

  // The id of a token (an added token's content, or a vocabulary entry as the file spells it), or
  // -1.
  int64_t token_id(const std::string& token) const;
  bool is_special(int64_t id) const;
  // The pieces the normalizer and pre-tokenizer make of a text without added tokens (tests).
  std::vector<std::string> pre_tokenize(std::string_view text) const;

  struct Impl;

 private:
  explicit HfTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The tokenizer.json that a spec path names: the file itself, or dir/tokenizer.json.
std::string hf_tokenizer_file(const std::string& path);

}  // namespace seqlab
