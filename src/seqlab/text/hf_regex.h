// A small backtracking regex engine over code points, for the split patterns of Hugging Face
// tokenizer.json files (pre_tokenizer Split, normalizer Replace).
//
// Those files are written for the Rust tokenizers library, which compiles them with Oniguruma.
// This engine implements the subset of Oniguruma's syntax that shipped tokenizers use, with the
// same leftmost-first (backtracking) semantics, and refuses everything else with a seqlab::Error
// that names the pattern, the offset and the construct:
//
//   supported  literals; escapes \t \n \r \f \v \a \e \xHH \x{H..} \uHHHH and escaped
//              punctuation; . (any unit but \n); classes [...] with ranges, negation [^...],
//              nested classes (a union), and the escapes below inside; \s \S (White_Space),
//              \d \D (\p{Nd}), \w \W (hf_unicode.h's word characters), \h \H (hex digits);
//              \p{..} \P{..} \p{^..} with a general category (L, Lu, Ll, Lt, Lm, Lo, LC, M, Mn,
//              Mc, Me, N, Nd, Nl, No, P, Pc, Pd, Ps, Pe, Pi, Pf, Po, S, Sm, Sc, Sk, So, Z, Zs, Zl,
//              Zp, C, Cc, Cf, Cs, Co, Cn, their long names such as Letter, gc=..), Any or
//              White_Space; groups (...), (?:...), (?<name>...); alternation |; quantifiers
//              * + ? {n} {n,} {n,m} {,m}, greedy or lazy (?); lookahead (?=...) (?!...); the
//              flag i as (?i:...), (?-i:...) or (?i) (to the end of the group); anchors ^ $ (lines,
//              as in Oniguruma) \A \z \Z \b \B.
//   refused    lookbehind, atomic groups (?>...), possessive and stacked quantifiers, back
//              references, \G \K \R \X \Q, POSIX brackets [:alpha:], class intersection &&, flags
//              other than i, scripts and other properties (\p{Han}), and a repeated sub-pattern
//              that can match the empty string.
//
// Case-insensitive matching folds ASCII letters only, as the JavaScript reference
// (@huggingface/tokenizers) does; Oniguruma also folds a few others (U+017F ſ with s, U+212A
// Kelvin with k). Matching runs on hf_unicode.h's units, so an invalid UTF-8 byte is one unit
// matched only by negated classes, \P{..} and `.`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seqlab::hf {

class Regex {
 public:
  // Throws seqlab::Error "<where>: regex '<pattern>': <problem>" for syntax this engine refuses
  // or does not know. `pattern` is UTF-8.
  Regex(std::string_view pattern, std::string where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The leftmost match that starts at or after `from`; false when there is none. Throws
  // seqlab::Error when one search backtracks more than ~10^6 + 1000 steps per unit of text (a
  // pattern with exponential backtracking).
  bool search(std::u32string_view text, size_t from, size_t* begin, size_t* end) const;
  // Every non-overlapping non-empty match, left to right (an empty match is skipped and the search
  // goes on one unit later), as [begin, end) unit offsets: Rust's find_iter without the empties,
  // which the callers would drop anyway.
  std::vector<std::pair<size_t, size_t>> find_all(std::u32string_view text) const;

  const std::string& pattern() const { return pattern_; }

  struct Program;

 private:
  std::string pattern_, where_;
  std::unique_ptr<Program> prog_;
};

}  // namespace seqlab::hf
