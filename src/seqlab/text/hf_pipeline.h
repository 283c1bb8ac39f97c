// The stages of a Hugging Face tokenizer.json pipeline, as HfTokenizer (hf_tokenizer.h) runs them:
// added tokens, normalizer, pre-tokenizer, BPE model, post-processor. Internal to the reader; the
// semantics follow the Rust tokenizers library (huggingface/tokenizers), stage by stage.
#pragma once

#include "seqlab/text/hf_regex.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace seqlab::hf {

// ---- Normalizer: a list of steps (an empty list is the null normalizer).
struct Normalizer {
  enum Step : uint8_t { kNfc, kNfd };
  std::vector<Step> steps;
  std::string apply(std::string_view text) const;
};

// ---- Pre-tokenizer.
enum class Behavior : uint8_t {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};

struct PreStep {
  enum Kind : uint8_t { kByteLevel, kSplit, kDigits, kPunctuation } kind = kByteLevel;
  // ByteLevel.
  bool add_prefix_space = false, use_regex = true;
  // Split: a regex, or a literal (when regex is null).
  std::shared_ptr<const Regex> regex;
  std::string literal;
  bool invert = false;
  Behavior behavior = Behavior::kIsolated;  // Split, Punctuation
  // Digits.
  bool individual_digits = false;
};

// Steps in order; the pieces of each step feed the next. Steps after ByteLevel see its mapped
// text (bytes spelled through GPT-2's byte table), as in the Rust library.
struct PreTokenizer {
  std::vector<PreStep> steps;
  std::vector<std::string> apply(std::string_view text) const;
};

// Splits text by a list of [begin, end) match spans (sorted, non-overlapping) under a delimiter
// behavior, as NormalizedString::split does; empty pieces are dropped. `invert`: the spans are the
// pieces to keep and what lies between them the delimiters.
void split_by_matches(std::string_view text, const std::vector<std::pair<size_t, size_t>>& spans,
                      Behavior behavior, bool invert, std::vector<std::string>* out);

// ---- Added tokens.
struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Leftmost-longest matching of a set of added tokens (Rust: aho-corasick, LeftmostLongest), with
// the tokens' single_word, lstrip and rstrip rules. The pieces: text (token < 0) or one token.
class AddedTokenMatcher {
 public:
  struct Piece {
    size_t begin, end;  // bytes of the input
    int32_t token;      // index into the tokens given to build(), or -1 for text
  };
  // `tokens`: all added tokens; `use`: which of them this matcher finds.
  void build(const std::vector<AddedToken>& tokens, const std::vector<bool>& use);
  bool empty() const { return n_patterns_ == 0; }
  std::vector<Piece> split(std::string_view text) const;

 private:
  // Trie over bytes: node -> (byte -> child), and the token that ends at each node (-1 if none).
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> ends_{-1};
  std::array<bool, 256> first_{};
  const std::vector<AddedToken>* tokens_ = nullptr;
  size_t n_patterns_ = 0;
};

// ---- BPE model over byte-level symbols.
class BpeModel {
 public:
  // vocab: token strings as tokenizer.json spells them (GPT-2's byte table). merges: pairs of
  // token strings in rank order (a later duplicate takes the later rank, as in the Rust library).
  // Throws seqlab::Error naming `source` for a merge whose parts or result are not in the
  // vocabulary (an unk_token that is not is an error only when a byte without a token needs it).
  struct Config {
    std::vector<std::pair<std::string, int64_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::string unk_token;  // empty: none
    bool fuse_unk = false, ignore_merges = false;
  };
  BpeModel(const Config& cfg, const std::string& source);

  // The ids of one pre-tokenized piece (bytes), cached. Thread-safe.
  void encode_piece(std::string_view piece, std::vector<int64_t>* out) const;
  // The same without the cache or ignore_merges: the merge loop itself (tests, fuzzing).
  std::vector<int32_t> merge(std::string_view piece) const;

  // token string -> id in the model vocabulary, or -1.
  int64_t token_id(const std::string& token) const;

 private:
  struct Rank {
    int32_t rank, result;
  };
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;     // token string -> id
  std::unordered_map<std::string, int32_t> by_bytes_;  // the bytes a token spells -> id
  std::array<int32_t, 256> byte_ids_{};                // the one-byte token of each byte, or -1
  std::unordered_map<uint64_t, Rank> ranks_;
  int32_t unk_ = -1;
  std::string unk_missing_;  // the error for an unk_token that is not in the vocabulary
  bool fuse_unk_ = false, ignore_merges_ = false;

  static constexpr size_t kCacheMax = 1 << 18, kCachePieceMax = 64;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// ---- Post-processor, reduced to what it adds around one sequence.
struct PostProcessor {
  std::vector<int64_t> prefix, suffix;
};

}  // namespace seqlab::hf
