// GPT-2's pre-tokenizer (src/seqlab/text/pretokenize.h): the pattern's alternatives one by one,
// the Unicode classes, strict UTF-8 decoding, and that pieces always rebuild the input.
#include <gtest/gtest.h>

#include "seqlab/text/pretokenize.h"
#include "seqlab/text/unicode_classes.h"

#include <random>

using namespace seqlab;
using Pieces = std::vector<std::string>;

namespace {

std::string joined(const Pieces& p) {
  std::string s;
  for (const auto& x : p) s += x;
  return s;
}

}  // namespace

TEST(Pretokenize, WordsNumbersAndPunctuationTakeOneLeadingSpace) {
  EXPECT_EQ(pretokenize("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pretokenize("abc123def"), (Pieces{"abc", "123", "def"}));
  EXPECT_EQ(pretokenize("x = 42!?"), (Pieces{"x", " =", " 42", "!?"}));
  EXPECT_EQ(pretokenize("a...b"), (Pieces{"a", "...", "b"}));
  EXPECT_EQ(pretokenize("héllo wörld"), (Pieces{"héllo", " wörld"}));
  EXPECT_EQ(pretokenize("你好，世界"), (Pieces{"你好", "，", "世界"}));
}

TEST(Pretokenize, Contractions) {
  EXPECT_EQ(pretokenize("I'm"), (Pieces{"I", "'m"}));
  EXPECT_EQ(
      pretokenize("don't they'll we've you're he'd it's"),
      (Pieces{"don", "'t", " they", "'ll", " we", "'ve", " you", "'re", " he", "'d", " it", "'s"}));
  // Case-sensitive, and taken even when letters follow.
  EXPECT_EQ(pretokenize("IT'S"), (Pieces{"IT", "'", "S"}));
  EXPECT_EQ(pretokenize("'sam"), (Pieces{"'s", "am"}));
  // Not after a space, and a run of apostrophes is punctuation.
  EXPECT_EQ(pretokenize(" 's"), (Pieces{" '", "s"}));
  EXPECT_EQ(pretokenize("''s"), (Pieces{"''", "s"}));
  EXPECT_EQ(pretokenize("end'"), (Pieces{"end", "'"}));
}

TEST(Pretokenize, WhitespaceRunsLeaveTheirLastSpaceToTheNextWord) {
  EXPECT_EQ(pretokenize("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(pretokenize("a    b"), (Pieces{"a", "   ", " b"}));
  EXPECT_EQ(pretokenize("a\nb"), (Pieces{"a", "\n", "b"}));
  EXPECT_EQ(pretokenize("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pretokenize("a \n b"), (Pieces{"a", " \n", " b"}));
  EXPECT_EQ(pretokenize("a\t b"), (Pieces{"a", "\t", " b"}));
  EXPECT_EQ(pretokenize("end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(pretokenize("   "), (Pieces{"   "}));
  EXPECT_EQ(pretokenize(" "), (Pieces{" "}));
  EXPECT_EQ(pretokenize(""), (Pieces{}));
  EXPECT_EQ(pretokenize("  x"), (Pieces{" ", " x"}));
  // Only U+0020 joins a word; other white space stands alone.
  EXPECT_EQ(pretokenize("a\u00a0b"), (Pieces{"a", "\u00a0", "b"}));
  EXPECT_EQ(pretokenize("a\u3000\u3000b"), (Pieces{"a", "\u3000", "\u3000", "b"}));
}

TEST(Pretokenize, InvalidBytesAreOtherCodePoints) {
  EXPECT_EQ(pretokenize("a\xff"
                        "b"),
            (Pieces{"a", "\xff", "b"}));
  EXPECT_EQ(pretokenize("\xff\xfe!"), (Pieces{"\xff\xfe!"}));
  EXPECT_EQ(pretokenize(" \x80x"), (Pieces{" \x80", "x"}));
  // A truncated sequence: its lead byte alone is invalid, the rest parsed afresh.
  EXPECT_EQ(pretokenize("\xe2\x82"
                        "ab"),
            (Pieces{"\xe2\x82", "ab"}));
}

TEST(Pretokenize, StrictUtf8) {
  const auto d = [](const std::string& s) { return decode_utf8(s, 0); };
  EXPECT_EQ(d("A").cp, U'A');
  EXPECT_EQ(d("\xc3\xa9").cp, U'\u00e9');
  EXPECT_EQ(d("\xe2\x82\xac").cp, U'\u20ac');
  EXPECT_EQ(d("\xe2\x82\xac").len, 3u);
  EXPECT_EQ(d("\xf0\x9f\x98\x80").cp, U'\U0001F600');
  for (const char* bad :
       {"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xf5\x80\x80\x80", "\xe2\x82", "\x80", "\xbf", "\xff"}) {
    const Utf8Char c = d(bad);
    EXPECT_FALSE(c.valid) << bad;
    EXPECT_EQ(c.len, 1u) << bad;
    EXPECT_EQ(char_class(c), CharClass::other);
  }
}

TEST(Pretokenize, UnicodeClasses) {
  for (char32_t c = 0; c < 128; ++c) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    EXPECT_EQ(is_unicode_letter(c), letter) << static_cast<int>(c);
    EXPECT_EQ(is_unicode_number(c), digit) << static_cast<int>(c);
  }
  // Letters: Ll, Lu, Lt (ǅ), Lm (ʰ), Lo (CJK, Hangul, Hebrew, kana); astral (𝐀, 𠀀).
  for (char32_t c : {U'é', U'ß', U'Ω', U'ж', U'ǅ', U'ʰ', U'中', U'한', U'א', U'カ', U'𝐀', U'𠀀'})
    EXPECT_TRUE(is_unicode_letter(c)) << static_cast<uint32_t>(c);
  // Numbers: Nd (Arabic-Indic, Devanagari, fullwidth), Nl (Roman numeral), No (², ½, ①).
  for (char32_t c : {U'٣', U'४', U'１', U'Ⅻ', U'²', U'½', U'①'})
    EXPECT_TRUE(is_unicode_number(c)) << static_cast<uint32_t>(c);
  // Neither: marks (combining acute, Devanagari vowel sign), symbols, emoji, punctuation.
  for (char32_t c : {U'\u0301', U'\u093e', U'€', U'∑', U'😀', U'，', U'\u200b'}) {
    EXPECT_FALSE(is_unicode_letter(c)) << static_cast<uint32_t>(c);
    EXPECT_FALSE(is_unicode_number(c)) << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U'\t', U'\n', U'\v', U'\f', U'\r', U' ', U'\u0085', U'\u00a0', U'\u1680',
                     U'\u2000', U'\u200a', U'\u2028', U'\u2029', U'\u202f', U'\u205f', U'\u3000'})
    EXPECT_EQ(char_class({c, 1, true}), CharClass::space) << static_cast<uint32_t>(c);
  for (char32_t c : {U'\u200b', U'\ufeff', U'\u001f'})
    EXPECT_EQ(char_class({c, 1, true}), CharClass::other) << static_cast<uint32_t>(c);
}

TEST(Pretokenize, PiecesRebuildAnyBytes) {
  std::mt19937 rng(7);
  // Random bytes, and random mixes of fragments that exercise every branch.
  const std::vector<std::string> frags = {
      "a",  "Z",   "é", "中", "1",    "٣",        " ",    "  ",     "\n",     "\t",    "'",
      "'s", "'ll", "!", "😀",  "\xff", "\xe2\x82", "\x80", "\u00a0", "\u3000", "\u0301"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s;
    const int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) {
      if (trial % 2)
        s.push_back(static_cast<char>(rng() & 0xFF));
      else
        s += frags[rng() % frags.size()];
    }
    const Pieces p = pretokenize(s);
    ASSERT_EQ(joined(p), s);
    for (const auto& x : p) ASSERT_FALSE(x.empty());
  }
}
