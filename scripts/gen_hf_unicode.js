// Writes src/seqlab/text/hf_unicode_data.cpp: the Unicode tables behind seqlab's Hugging Face
// tokenizer.json reader (text/hf_unicode.h): every code point's general category (for the
// pre-tokenizers' regex classes \p{L}, \p{Lu}, \p{M}, \p{P}, ...) and the canonical normalization
// data of NFC and NFD (Qwen2's and GPT-NeoX's tokenizers normalize to NFC).
//
// Everything comes from this node's own ICU (String.prototype.normalize and regex property
// escapes), the engine the JavaScript reference (npm @huggingface/tokenizers) runs on:
//   - categories: /\p{gc=Xx}/u for the 30 categories (unassigned code points are Cn);
//   - full canonical decompositions: s.normalize('NFD') of each code point (Hangul syllables are
//     left to the algorithm);
//   - combining classes: JavaScript does not expose them, so they are recovered from canonical
//     reordering itself. A code point is a non-starter when NFD moves it past U+0301 (class 230)
//     or U+0334 (class 1); non-starters are then sorted by "x sorts before y" (NFD(y x) == x y)
//     and numbered 1, 2, ... in that order. The numbers are ranks, not Unicode's class values,
//     but they order and block exactly as the real classes do, which is all NFC and NFD use;
//   - compositions: every primary composite c (NFC(NFD(c)) == c) as a pair (first, second) with
//     NFC(first second) == c, first itself NFC.
// The generator checks its tables by running the same algorithms in JavaScript on every code point
// and on random sequences against String.prototype.normalize, and stops on any difference.
//
//   node scripts/gen_hf_unicode.js > src/seqlab/text/hf_unicode_data.cpp
'use strict';

const MAX = 0x110000;
const isSurrogate = (cp) => cp >= 0xd800 && cp <= 0xdfff;
const isHangulSyllable = (cp) => cp >= 0xac00 && cp <= 0xd7a3;
const str = (cps) => String.fromCodePoint(...cps);
const cpsOf = (s) => Array.from(s, (ch) => ch.codePointAt(0));

// ---- General categories, in the order of hf_unicode.h's enum.
const CATS = ['Cn', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd',
  'Ps', 'Pe', 'Pi', 'Pf', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Cs', 'Co'];
const catRes = CATS.map((c) => (c === 'Cn' ? null : new RegExp(`^\\p{gc=${c}}$`, 'u')));
function categoryOf(cp) {
  if (isSurrogate(cp)) return CATS.indexOf('Cs');
  const s = String.fromCodePoint(cp);
  for (let i = 1; i < CATS.length; i++) if (catRes[i].test(s)) return i;
  return 0;
}
const catRanges = [];  // [lo, hi, cat], assigned code points only (gaps are Cn)
{
  let lo = 0, cur = categoryOf(0);
  for (let cp = 1; cp <= MAX; cp++) {
    const c = cp < MAX ? categoryOf(cp) : -1;
    if (c !== cur) {
      if (cur !== 0) catRanges.push([lo, cp - 1, cur]);
      lo = cp;
      cur = c;
    }
  }
}

// ---- Decompositions.
const decomp = new Map();  // cp -> full canonical decomposition (array of code points)
for (let cp = 0; cp < MAX; cp++) {
  if (isSurrogate(cp) || isHangulSyllable(cp)) continue;
  const s = String.fromCodePoint(cp);
  const d = s.normalize('NFD');
  if (d !== s) decomp.set(cp, cpsOf(d));
}

// ---- Combining classes (ranks).
const A230 = 0x301, A1 = 0x334;
function isNonStarter(cp) {
  if (decomp.has(cp) || isSurrogate(cp) || isHangulSyllable(cp)) return false;
  const t = (a, b) => str([a, b]).normalize('NFD') !== str([a, b]);
  return t(A230, cp) || t(cp, A230) || t(cp, A1);
}
const nonStarters = [];
for (let cp = 0; cp < MAX; cp++) if (isNonStarter(cp)) nonStarters.push(cp);
// x < y (x's class is lower) exactly when NFD(y x) puts x first.
const before = (x, y) => str([y, x]).normalize('NFD') === str([x, y]);
nonStarters.sort((x, y) => (before(x, y) ? -1 : before(y, x) ? 1 : x - y));
const rank = new Map();
{
  let r = 0;
  for (let i = 0; i < nonStarters.length; i++) {
    if (i === 0 || before(nonStarters[i - 1], nonStarters[i])) r++;
    rank.set(nonStarters[i], r);
  }
  if (r > 255) throw new Error(`too many combining classes: ${r}`);
}
const ccc = (cp) => rank.get(cp) || 0;

// ---- Compositions.
const compositions = [];  // [first, second, composite]
for (const [cp, d] of decomp) {
  const s = String.fromCodePoint(cp);
  if (str(d).normalize('NFC') !== s) continue;  // excluded or a singleton
  let found = false;
  for (let k = d.length - 1; k >= 1 && !found; k--) {
    const rest = d.slice(0, k).concat(d.slice(k + 1));
    const first = cpsOf(str(rest).normalize('NFC'));
    if (first.length !== 1 || first[0] === cp) continue;
    if (str([first[0], d[k]]).normalize('NFC') === s) {
      compositions.push([first[0], d[k], cp]);
      found = true;
    }
  }
  if (!found) throw new Error(`no composition pair for U+${cp.toString(16)}`);
}
compositions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
const compMap = new Map(compositions.map(([a, b, c]) => [a * MAX + b, c]));
const seconds = new Set(compositions.map((x) => x[1]));

// ---- The same algorithms as hf_unicode.cpp, to check the tables.
const SBase = 0xac00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11a7;
const LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;
function nfd(cps) {
  const out = [];
  for (const cp of cps) {
    if (isHangulSyllable(cp)) {
      const s = cp - SBase;
      out.push(LBase + Math.floor(s / NCount), VBase + Math.floor((s % NCount) / TCount));
      if (s % TCount) out.push(TBase + (s % TCount));
    } else if (decomp.has(cp)) {
      out.push(...decomp.get(cp));
    } else {
      out.push(cp);
    }
  }
  for (let i = 1; i < out.length; i++) {  // canonical ordering: insertion sort of non-starter runs
    const c = ccc(out[i]);
    if (c === 0) continue;
    for (let j = i; j > 0 && ccc(out[j - 1]) > c; j--) [out[j - 1], out[j]] = [out[j], out[j - 1]];
  }
  return out;
}
function compose(a, b) {
  if (a >= LBase && a < LBase + LCount && b >= VBase && b < VBase + VCount)
    return SBase + ((a - LBase) * VCount + (b - VBase)) * TCount;
  if (isHangulSyllable(a) && (a - SBase) % TCount === 0 && b > TBase && b < TBase + TCount)
    return a + (b - TBase);
  return compMap.get(a * MAX + b);
}
function nfc(cps) {
  const d = nfd(cps), out = [];
  let starter = -1;
  for (const c of d) {
    const cc = ccc(c);
    if (starter >= 0) {
      const adjacent = out.length - 1 === starter;
      const last = adjacent ? 0 : ccc(out[out.length - 1]);
      if (adjacent || (last !== 0 && last < cc)) {
        const k = compose(out[starter], c);
        if (k !== undefined) {
          out[starter] = k;
          continue;
        }
      }
    }
    if (cc === 0) starter = out.length;
    out.push(c);
  }
  return out;
}
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
function check(cps) {
  const s = str(cps);
  if (!same(nfd(cps), cpsOf(s.normalize('NFD'))) || !same(nfc(cps), cpsOf(s.normalize('NFC'))))
    throw new Error(`table check failed on ${cps.map((x) => x.toString(16)).join(' ')}`);
}
for (let cp = 0; cp < MAX; cp++) if (!isSurrogate(cp)) check([cp]);
{
  // Random sequences over the interesting code points: starters that compose, non-starters,
  // Hangul jamo and syllables, and plain letters.
  const pool = [...new Set([...nonStarters, ...compositions.flat(), 0x61, 0x41, 0x20,
    0x1100, 0x1161, 0x11a8, 0xac00, 0xac01, 0x0915, 0x093c])];
  let seed = 12345;
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let i = 0; i < 200000; i++) {
    const len = 1 + rnd(6);
    const cps = [];
    for (let k = 0; k < len; k++) cps.push(pool[rnd(pool.length)]);
    check(cps);
  }
}

// A code point is NFC-inert when a text made only of inert code points is its own NFC: a starter
// that NFC leaves alone and that never composes with what precedes it.
const inertRanges = [];  // ranges of code points that are NOT inert
{
  const notInert = (cp) =>
    !isSurrogate(cp) && (ccc(cp) !== 0 || seconds.has(cp) ||
      String.fromCodePoint(cp).normalize('NFC') !== String.fromCodePoint(cp) ||
      (cp > TBase && cp < TBase + TCount) || (cp >= VBase && cp < VBase + VCount));
  let lo = -1;
  for (let cp = 0; cp <= MAX; cp++) {
    const n = cp < MAX && notInert(cp);
    if (n && lo < 0) lo = cp;
    if (!n && lo >= 0) {
      inertRanges.push([lo, cp - 1]);
      lo = -1;
    }
  }
}

// ---- Output.
const hex = (x) => '0x' + x.toString(16).toUpperCase();
function rows(items, per) {
  const lines = [];
  for (let i = 0; i < items.length; i += per) lines.push('    ' + items.slice(i, i + per).join(', ') + ',');
  return lines.join('\n');
}
const decompEntries = [...decomp.entries()].sort((a, b) => a[0] - b[0]);
const flat = [];
const decompRows = decompEntries.map(([cp, d]) => {
  const row = `{${hex(cp)}, ${flat.length}, ${d.length}}`;
  flat.push(...d);
  return row;
});
const cccRows = [...rank.entries()].sort((a, b) => a[0] - b[0]).map(([cp, r]) => `{${hex(cp)}, ${r}}`);

process.stdout.write(`// Generated by scripts/gen_hf_unicode.js (Unicode ${process.versions.unicode}); do not edit.
// ${catRanges.length} general-category ranges, ${decompEntries.length} canonical decompositions, ${rank.size} non-starters
// (${new Set(rank.values()).size} combining-class ranks), ${compositions.length} compositions, ${inertRanges.length} ranges that are not NFC-inert.
// clang-format off
#include "seqlab/text/hf_unicode_data.h"

namespace seqlab::hf_unicode_data {

const CategoryRange kCategories[] = {
${rows(catRanges.map(([a, b, c]) => `{${hex(a)}, ${hex(b)}, ${c}}`), 5)}
};
const size_t kCategoriesSize = sizeof(kCategories) / sizeof(kCategories[0]);

const Decomposition kDecompositions[] = {
${rows(decompRows, 6)}
};
const size_t kDecompositionsSize = sizeof(kDecompositions) / sizeof(kDecompositions[0]);

const char32_t kDecompositionData[] = {
${rows(flat.map(hex), 10)}
};

const CombiningClass kCombiningClasses[] = {
${rows(cccRows, 8)}
};
const size_t kCombiningClassesSize = sizeof(kCombiningClasses) / sizeof(kCombiningClasses[0]);

const Composition kCompositions[] = {
${rows(compositions.map(([a, b, c]) => `{${hex(a)}, ${hex(b)}, ${hex(c)}}`), 4)}
};
const size_t kCompositionsSize = sizeof(kCompositions) / sizeof(kCompositions[0]);

const Range kNotNfcInert[] = {
${rows(inertRanges.map(([a, b]) => `{${hex(a)}, ${hex(b)}}`), 6)}
};
const size_t kNotNfcInertSize = sizeof(kNotNfcInert) / sizeof(kNotNfcInert[0]);

const char* const kUnicodeVersion = "${process.versions.unicode}";

}  // namespace seqlab::hf_unicode_data
`);
