#include "seqlab/text/pretokenize.h"

#include "seqlab/text/unicode_classes.h"

#include <array>

namespace seqlab {
namespace {

constexpr char32_t kInvalid = 0xFFFFFFFF;

bool is_cont(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

bool is_white_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

CharClass classify(char32_t c) {
  if (is_white_space(c)) return CharClass::space;
  if (is_unicode_letter(c)) return CharClass::letter;
  if (is_unicode_number(c)) return CharClass::number;
  return CharClass::other;
}

// ASCII classes, computed once from the same rules.
const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> t = [] {
    std::array<CharClass, 128> a{};
    for (char32_t c = 0; c < 128; ++c) a[c] = classify(c);
    return a;
  }();
  return t;
}

}  // namespace

Utf8Char decode_utf8(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = at(i);
  const size_t left = s.size() - i;
  if (b0 < 0x80) return {b0, 1, true};
  // Each lead byte fixes the length and the allowed range of the second byte (no overlongs, no
  // surrogates U+D800..DFFF, nothing above U+10FFFF); later bytes are plain continuations.
  uint32_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {kInvalid, 1, false};
  }
  if (left < len || at(i + 1) < lo || at(i + 1) > hi) return {kInvalid, 1, false};
  for (uint32_t k = 2; k < len; ++k)
    if (!is_cont(at(i + k))) return {kInvalid, 1, false};
  char32_t cp = b0 & (0x7F >> len);
  for (uint32_t k = 1; k < len; ++k) cp = (cp << 6) | (at(i + k) & 0x3F);
  return {cp, len, true};
}

CharClass char_class(const Utf8Char& c) {
  if (!c.valid) return CharClass::other;
  if (c.cp < 128) return ascii_classes()[c.cp];
  return classify(c.cp);
}

Pretokenizer::Unit Pretokenizer::unit_at(size_t i) const {
  const auto b = static_cast<unsigned char>(text_[i]);
  if (b < 0x80) return {ascii_classes()[b], 1};
  const Utf8Char c = decode_utf8(text_, i);
  return {char_class(c), c.len};
}

size_t Pretokenizer::run_end(size_t i, CharClass cls) const {
  while (i < text_.size()) {
    const Unit u = unit_at(i);
    if (u.cls != cls) break;
    i += u.len;
  }
  return i;
}

bool Pretokenizer::next(std::string_view* piece) {
  const size_t n = text_.size(), i = pos_;
  if (i >= n) return false;
  size_t end = 0;
  const char c = text_[i];

  // 1. Contractions.
  if (c == '\'' && i + 1 < n) {
    const char d = text_[i + 1];
    if (d == 's' || d == 't' || d == 'm' || d == 'd') {
      end = i + 2;
    } else if (i + 2 < n) {
      const char e = text_[i + 2];
      if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) end = i + 3;
    }
  }

  if (end == 0) {
    const Unit u = unit_at(i);
    if (c == ' ' && i + 1 < n) {
      // 2-4. " word", " 123", " ?!": the space joins a following non-space run.
      const Unit v = unit_at(i + 1);
      if (v.cls != CharClass::space) end = run_end(i + 1, v.cls);
    }
    if (end == 0) {
      if (u.cls != CharClass::space) {
        end = run_end(i, u.cls);
      } else {
        // 5-6. Whitespace. Backtracking \s+(?!\S) leaves the run's last code point for the
        // next piece when non-whitespace follows, unless the run is that one code point.
        const size_t run = run_end(i, CharClass::space);
        end = run;
        if (run < n) {
          size_t last = i;  // start of the run's last code point
          for (size_t k = i; k < run; k += unit_at(k).len) last = k;
          if (last > i) end = last;
        }
      }
    }
  }
  *piece = text_.substr(i, end - i);
  pos_ = end;
  return true;
}

std::vector<std::string> pretokenize(std::string_view text) {
  std::vector<std::string> out;
  Pretokenizer it(text);
  std::string_view piece;
  while (it.next(&piece)) out.emplace_back(piece);
  return out;
}

void append_utf8(std::string* s, char32_t c) {
  if (c < 0x80) {
    s->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    s->push_back(static_cast<char>(0xC0 | (c >> 6)));
    s->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    s->push_back(static_cast<char>(0xE0 | (c >> 12)));
    s->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    s->push_back(static_cast<char>(0xF0 | (c >> 18)));
    s->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    s->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace seqlab
