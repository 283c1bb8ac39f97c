// GPT-2's pre-tokenizer, written by hand over UTF-8 code points (no regex library).
//
// GPT-2 (Radford et al. 2019, openai/gpt-2 encoder.py) splits text with the pattern
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// before BPE, so merges never cross a word, number or punctuation boundary. Alternatives are
// tried in order at each position (leftmost-first, as a backtracking regex engine does):
//
//   1. a contraction: an ASCII apostrophe followed by s, t, re, ve, m, ll or d (case-sensitive);
//   2-4. an optional single space (U+0020) then a run of letters, of numbers, or of "other"
//      code points (neither whitespace, letter nor number);
//   5. a whitespace run that is not followed by non-whitespace: all of a run at the end of the
//      text, otherwise all but its last code point, which then leads the next word (" word");
//   6. a whitespace run (a single code point here: longer runs were taken by 5).
//
// Classes: letters = Unicode category L, numbers = N (tables from unicode_classes.h);
// whitespace = the Unicode White_Space property (\t \n \v \f \r, space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). JavaScript's \s differs on two code
// points (it adds U+FEFF and lacks U+0085); Python's regex module and Rust's follow White_Space.
//
// Any byte string is accepted: a byte that does not start a valid UTF-8 sequence (overlong,
// surrogate, above U+10FFFF, truncated, stray continuation byte) is one code point of the "other"
// class on its own. The pieces always concatenate back to the input exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

enum class CharClass : uint8_t { letter, number, space, other };

// One code point decoded from UTF-8. An invalid byte gives {cp = 0xFFFFFFFF, len = 1, valid =
// false}.
struct Utf8Char {
  char32_t cp;
  uint32_t len;  // bytes, 1..4
  bool valid;
};

// Decodes the code point starting at s[i] (i < s.size()), strictly (RFC 3629).
Utf8Char decode_utf8(std::string_view s, size_t i);

// Appends the UTF-8 encoding of code point c (< 0x110000) to s.
void append_utf8(std::string* s, char32_t c);

// The pre-tokenizer's class of a code point (invalid bytes are CharClass::other).
CharClass char_class(const Utf8Char& c);

// Iterates over the pieces of a text without copying:
//   Pretokenizer it(text); std::string_view piece; while (it.next(&piece)) ...
// Cost: linear in the text; ASCII takes a table lookup per byte. Not thread-safe (one per thread).
class Pretokenizer {
 public:
  explicit Pretokenizer(std::string_view text) : text_(text) {}
  bool next(std::string_view* piece);

 private:
  struct Unit {
    CharClass cls;
    uint32_t len;
  };
  Unit unit_at(size_t i) const;
  size_t run_end(size_t i, CharClass cls) const;  // end of the run of `cls` starting at i

  std::string_view text_;
  size_t pos_ = 0;
};

// All pieces, copied (tests, tools).
std::vector<std::string> pretokenize(std::string_view text);

}  // namespace seqlab
