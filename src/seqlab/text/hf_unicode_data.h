// The tables that scripts/gen_hf_unicode.js generates into hf_unicode_data.cpp (from node's ICU):
// general categories, canonical decompositions, combining-class ranks and compositions. Read
// through hf_unicode.h; nothing else should need these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace seqlab::hf_unicode_data {

struct CategoryRange {
  char32_t lo, hi;  // inclusive
  uint8_t cat;      // hf::Category
};
struct Decomposition {
  char32_t cp;
  uint16_t offset, len;  // into kDecompositionData
};
struct CombiningClass {
  char32_t cp;
  uint8_t rank;  // ranks order and block as Unicode's combining classes do; 0 = starter
};
struct Composition {
  char32_t first, second, composite;
};
struct Range {
  char32_t lo, hi;  // inclusive
};

// Sorted by code point (compositions by first, then second); gaps in kCategories are Cn.
extern const CategoryRange kCategories[];
extern const size_t kCategoriesSize;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionsSize;
extern const char32_t kDecompositionData[];
extern const CombiningClass kCombiningClasses[];
extern const size_t kCombiningClassesSize;
extern const Composition kCompositions[];
extern const size_t kCompositionsSize;
// Code points that are not NFC-inert: a text with none of them is already in NFC (and NFD leaves
// it alone only if it also has no decomposable code point; see hf_unicode.cpp).
extern const Range kNotNfcInert[];
extern const size_t kNotNfcInertSize;
extern const char* const kUnicodeVersion;

}  // namespace seqlab::hf_unicode_data
