// A controlled synthetic multilingual corpus for comparing pretraining objectives (Li et al. 2024,
// "A Comparison of Language Modeling and Translation as Multilingual Pretraining Objectives").
//
// One small probabilistic grammar draws a *meaning* (subject, verb, optional object, tense,
// negation, optional prepositional phrase); the meaning is rendered into three invented languages
// that differ in word order and vocabulary, so every meaning gives three parallel sentences, each
// with gold part-of-speech tags and a sentence-level label.
//
//   language  clause  adjective  adposition     tense/negation particles
//   L0        SVO     before N   preposition    before the verb
//   L1        SOV     after N    postposition   after the verb
//   L2        VOS     before N   preposition    before the verb (sentence-initial)
//
// The prepositional phrase always comes last, before the full stop. Each language has its own
// word forms (disjoint token ids, assigned by a per-language permutation, so token order says
// nothing about the concept), and in each language four intransitive verbs are spelled like the
// singular of four nouns (like English "walk", "run"): tagging those tokens needs context.
//
// The sentence label is the grammatical number of the subject (0 singular, 1 plural). Every noun
// carries its own number, and an object may differ from the subject, so the label needs the
// sentence's structure, not one token: in L0 and L1 the subject is the first noun phrase, in L2
// (VOS) it is the one after the object.
//
// Everything is deterministic: the lexicons are fixed, and meaning i of a stream is drawn from
// mix_seed(stream_seed, i) with our own splitmix64 draws (no std:: distributions, whose output
// differs between standard libraries).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab {

// Part-of-speech tags (the tagging task's classes).
enum GrammarPos : int64_t {
  kPosDet = 0,
  kPosAdj,
  kPosNoun,
  kPosVerb,
  kPosPart,  // tense and negation particles
  kPosAdp,
  kPosPunct,
  kNumGrammarPos
};
extern const char* const kGrammarPosNames[kNumGrammarPos];

// splitmix64 draws: the same numbers on every standard library (std:: distributions differ).
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0,1)
  bool coin(double p) { return uniform() < p; }
};

struct NounPhrase {
  int noun = 0;         // 0..kNouns-1
  bool plural = false;  // the noun's number (each number has its own word form)
  int adj = -1;         // 0..kAdjs-1, or -1 for none
  int det = -1;         // 0..kDets-1, or -1 for none
};

struct Meaning {
  NounPhrase subj;
  int verb = 0;    // 0..kTransVerbs-1 transitive, then kIntransVerbs intransitive ones
  NounPhrase obj;  // used when the verb is transitive
  int tense = 0;   // 0 present (unmarked), 1 past, 2 future
  bool neg = false;
  bool has_pp = false;
  int prep = 0;  // 0..kPreps-1
  NounPhrase pp;
  bool transitive() const;
};

struct GrammarLanguage {
  std::string name;
  std::string order;  // SVO | SOV | VOS
  bool adj_after_noun = false;
  bool postpositions = false;
  bool particles_after_verb = false;
};

// One sentence in one language: global token ids and their tags (same length).
struct Rendered {
  std::vector<int64_t> tokens;
  std::vector<int64_t> tags;
};

// What a word form can be: a concept of one part of speech (plural: nouns only).
struct LexReading {
  int64_t pos = 0;
  int concept_id = 0;  // noun / adj / verb / det / prep index; particles: 1 past, 2 future, 3 neg
  bool plural = false;
};

class Grammar {
 public:
  static constexpr int kLanguages = 3;
  static constexpr int kNouns = 20, kAdjs = 10, kTransVerbs = 8, kIntransVerbs = 6;
  static constexpr int kVerbs = kTransVerbs + kIntransVerbs;
  static constexpr int kDets = 2, kPreps = 4;
  static constexpr int kHomographs = 4;  // intransitive verbs spelled like a noun's singular
  // Word forms per language: nouns sg + pl, adjectives, verbs (less the homographs), determiners,
  // prepositions, past / future / negation particles, the full stop.
  static constexpr int64_t kFormsPerLanguage =
      2 * kNouns + kAdjs + kVerbs - kHomographs + kDets + kPreps + 3 + 1;
  // Special tokens, shared by every language.
  static constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kSep = 3, kMask = 4;
  static constexpr int64_t kLangTag0 = 5;  // language l's tag is kLangTag0 + l
  static constexpr int64_t kFirstWord = kLangTag0 + kLanguages;
  // Longest sentence: 2 particles + verb + 2 noun phrases of 3 + adposition + 3 + full stop.
  static constexpr int64_t kMaxSentence = 14;

  Grammar();

  int64_t vocab_size() const { return kFirstWord + kLanguages * kFormsPerLanguage; }
  const GrammarLanguage& language(int l) const { return langs_.at(l); }

  // Meaning number `index` of the stream `stream_seed` (deterministic).
  Meaning sample(uint64_t stream_seed, uint64_t index) const;
  Rendered render(const Meaning& m, int lang) const;
  // The sentence label: the subject's number.
  static int64_t label(const Meaning& m) { return m.subj.plural ? 1 : 0; }
  static constexpr int64_t kNumLabels = 2;

  // Word forms (global token ids).
  int64_t noun_form(int lang, int noun, bool plural) const;
  int64_t adj_form(int lang, int adj) const;
  int64_t verb_form(int lang, int verb) const;
  int64_t det_form(int lang, int det) const;
  int64_t prep_form(int lang, int prep) const;
  int64_t particle_form(int lang, int which) const;  // 1 past, 2 future, 3 negation
  int64_t stop_form(int lang) const;
  // Every reading of a token (two for a homograph, none for a special token).
  const std::vector<LexReading>& readings(int64_t token) const;
  // The language a word form belongs to, or -1 for a special token.
  int language_of(int64_t token) const;
  // A uniformly random word form of any language (MLM's random replacement).
  int64_t random_word(uint64_t r) const;

 private:
  std::vector<GrammarLanguage> langs_;
  // [lang][slot] -> token id, where slot enumerates the forms in a fixed concept order.
  std::vector<std::vector<int64_t>> form_;
  std::vector<std::vector<int>> homograph_noun_;   // [lang][h]: the noun intransitive verb h shares
  std::vector<std::vector<LexReading>> readings_;  // [token]
  void append_np(const NounPhrase& np, int lang, Rendered& r) const;
};

}  // namespace seqlab
