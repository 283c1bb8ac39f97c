#include "seqlab/text/hf_unicode.h"

#include "seqlab/text/hf_unicode_data.h"
#include "seqlab/text/pretokenize.h"

#include <algorithm>
#include <array>

namespace seqlab::hf {
namespace data = hf_unicode_data;
namespace {

Category lookup_category(char32_t c) {
  const auto* begin = data::kCategories;
  const auto* end = begin + data::kCategoriesSize;
  const auto* it = std::lower_bound(
      begin, end, c, [](const data::CategoryRange& r, char32_t x) { return r.hi < x; });
  return it != end && it->lo <= c ? static_cast<Category>(it->cat) : Category::Cn;
}

const std::array<Category, 256>& latin1_categories() {
  static const std::array<Category, 256> t = [] {
    std::array<Category, 256> a{};
    for (char32_t c = 0; c < 256; ++c) a[c] = lookup_category(c);
    return a;
  }();
  return t;
}

// The combining-class rank of a code point (0 for starters and invalid bytes).
uint8_t ccc(char32_t c) {
  if (c < 0x300) return 0;
  const auto* begin = data::kCombiningClasses;
  const auto* end = begin + data::kCombiningClassesSize;
  const auto* it = std::lower_bound(
      begin, end, c, [](const data::CombiningClass& r, char32_t x) { return r.cp < x; });
  return it != end && it->cp == c ? it->rank : 0;
}

// Hangul syllables decompose and compose by arithmetic (Unicode §3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = 19 * kNCount;

bool is_hangul_syllable(char32_t c) {
  return c >= kSBase && c < kSBase + kSCount;
}

void decompose_into(char32_t c, std::u32string* out) {
  if (c < 0xC0 || c >= kInvalidByte) {
    out->push_back(c);
    return;
  }
  if (is_hangul_syllable(c)) {
    const char32_t s = c - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto* begin = data::kDecompositions;
  const auto* end = begin + data::kDecompositionsSize;
  const auto* it = std::lower_bound(
      begin, end, c, [](const data::Decomposition& r, char32_t x) { return r.cp < x; });
  if (it == end || it->cp != c) {
    out->push_back(c);
    return;
  }
  out->append(data::kDecompositionData + it->offset, it->len);
}

// Sorts every run of non-starters by combining class, stably (insertion sort: runs are short).
void canonical_order(std::u32string* s) {
  for (size_t i = 1; i < s->size(); ++i) {
    const uint8_t c = ccc((*s)[i]);
    if (c == 0) continue;
    for (size_t j = i; j > 0 && ccc((*s)[j - 1]) > c; --j) std::swap((*s)[j - 1], (*s)[j]);
  }
}

// The primary composite of a pair, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (is_hangul_syllable(a) && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* begin = data::kCompositions;
  const auto* end = begin + data::kCompositionsSize;
  const auto* it =
      std::lower_bound(begin, end, std::make_pair(a, b),
                       [](const data::Composition& r, std::pair<char32_t, char32_t> x) {
                         return r.first != x.first ? r.first < x.first : r.second < x.second;
                       });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

bool nfc_inert(char32_t c) {
  if (c < 0x300) return true;
  if (c >= kInvalidByte) return true;
  const auto* begin = data::kNotNfcInert;
  const auto* end = begin + data::kNotNfcInertSize;
  const auto* it =
      std::lower_bound(begin, end, c, [](const data::Range& r, char32_t x) { return r.hi < x; });
  return !(it != end && it->lo <= c);
}

}  // namespace

Category general_category(char32_t c) {
  if (c < 256) return latin1_categories()[c];
  if (c >= kInvalidByte) return Category::Cn;
  return lookup_category(c);
}

bool is_white_space(char32_t c) {
  // The pre-tokenizer's whitespace class is Unicode's White_Space (pretokenize.h).
  return c < kInvalidByte && char_class(Utf8Char{c, 1, true}) == CharClass::space;
}

bool is_word_char(char32_t c) {
  if (c < 128) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  return in_categories(c, kLetterMask | kMarkMask | cat_bit(Category::Nd) | cat_bit(Category::Nl) |
                              cat_bit(Category::Pc));
}

std::u32string to_units(std::string_view text, std::vector<uint32_t>* offsets) {
  std::u32string u;
  u.reserve(text.size());
  if (offsets) {
    offsets->clear();
    offsets->reserve(text.size() + 1);
  }
  for (size_t i = 0; i < text.size();) {
    if (offsets) offsets->push_back(static_cast<uint32_t>(i));
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      u.push_back(b);
      ++i;
      continue;
    }
    const Utf8Char c = decode_utf8(text, i);
    u.push_back(c.valid ? c.cp : kInvalidByte + b);
    i += c.len;
  }
  if (offsets) offsets->push_back(static_cast<uint32_t>(text.size()));
  return u;
}

void append_unit(std::string* s, char32_t c) {
  if (c >= kInvalidByte)
    s->push_back(static_cast<char>(c - kInvalidByte));  // a raw byte that was not UTF-8
  else
    append_utf8(s, c);
}

std::string from_units(std::u32string_view units) {
  std::string s;
  s.reserve(units.size());
  for (char32_t c : units) append_unit(&s, c);
  return s;
}

std::u32string nfd_units(std::u32string_view units) {
  std::u32string out;
  out.reserve(units.size());
  for (char32_t c : units) decompose_into(c, &out);
  canonical_order(&out);
  return out;
}

std::u32string nfc_units(std::u32string_view units) {
  const std::u32string d = nfd_units(units);
  std::u32string out;
  out.reserve(d.size());
  // Canonical composition: each code point may join the last starter unless something between
  // them blocks it (a code point of equal or higher class, or any when it is itself a starter).
  ptrdiff_t starter = -1;
  for (char32_t c : d) {
    const uint8_t cc = ccc(c);
    if (starter >= 0) {
      const bool adjacent = static_cast<ptrdiff_t>(out.size()) - 1 == starter;
      const uint8_t last = adjacent ? 0 : ccc(out.back());
      if (adjacent || (last != 0 && last < cc)) {
        if (const char32_t k = compose(out[starter], c)) {
          out[starter] = k;
          continue;
        }
      }
    }
    if (cc == 0) starter = static_cast<ptrdiff_t>(out.size());
    out.push_back(c);
  }
  return out;
}

std::string nfc(std::string_view text) {
  bool inert = true;
  for (size_t i = 0; i < text.size() && inert;) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const Utf8Char c = decode_utf8(text, i);
    inert = !c.valid || nfc_inert(c.cp);
    i += c.len;
  }
  if (inert) return std::string(text);
  return from_units(nfc_units(to_units(text)));
}

std::string nfd(std::string_view text) {
  bool ascii = true;
  for (char ch : text) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
  if (ascii) return std::string(text);
  return from_units(nfd_units(to_units(text)));
}

const char* unicode_version() {
  return data::kUnicodeVersion;
}

}  // namespace seqlab::hf
