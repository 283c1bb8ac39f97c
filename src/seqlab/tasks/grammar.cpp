#include "seqlab/tasks/grammar.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/task.h"

#include <numeric>

namespace seqlab {

const char* const kGrammarPosNames[kNumGrammarPos] = {"DET",  "ADJ", "NOUN", "VERB",
                                                      "PART", "ADP", "PUNCT"};

namespace {

std::vector<int> shuffled(int n, uint64_t seed) {
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  SplitMix d{seed};
  for (int i = n - 1; i > 0; --i) std::swap(p[i], p[static_cast<size_t>(d.below(i + 1))]);
  return p;
}

// Slots of the forms of one language, before its permutation.
constexpr int kSlotNounSg = 0;
constexpr int kSlotNounPl = kSlotNounSg + Grammar::kNouns;
constexpr int kSlotAdj = kSlotNounPl + Grammar::kNouns;
constexpr int kSlotVerb = kSlotAdj + Grammar::kAdjs;  // non-homograph verbs
constexpr int kSlotDet = kSlotVerb + Grammar::kVerbs - Grammar::kHomographs;
constexpr int kSlotPrep = kSlotDet + Grammar::kDets;
constexpr int kSlotPart = kSlotPrep + Grammar::kPreps;
constexpr int kSlotStop = kSlotPart + 3;
static_assert(kSlotStop + 1 == Grammar::kFormsPerLanguage, "slot layout");

// Meaning probabilities.
constexpr double kPAdj = 0.4, kPDet = 0.5, kPNeg = 0.3, kPPrep = 0.3;

NounPhrase sample_np(SplitMix& d) {
  NounPhrase np;
  np.noun = static_cast<int>(d.below(Grammar::kNouns));
  np.plural = d.coin(0.5);
  np.adj = d.coin(kPAdj) ? static_cast<int>(d.below(Grammar::kAdjs)) : -1;
  np.det = d.coin(kPDet) ? static_cast<int>(d.below(Grammar::kDets)) : -1;
  return np;
}

}  // namespace

bool Meaning::transitive() const {
  return verb < Grammar::kTransVerbs;
}

Grammar::Grammar() {
  langs_ = {{"L0", "SVO", false, false, false},
            {"L1", "SOV", true, true, true},
            {"L2", "VOS", false, false, false}};
  readings_.assign(static_cast<size_t>(vocab_size()), {});
  for (int l = 0; l < kLanguages; ++l) {
    const auto perm = shuffled(static_cast<int>(kFormsPerLanguage), mix_seed(0x6772616dULL, l));
    std::vector<int64_t> f(kFormsPerLanguage);
    for (int s = 0; s < kFormsPerLanguage; ++s) f[s] = kFirstWord + l * kFormsPerLanguage + perm[s];
    form_.push_back(f);
    const auto nouns = shuffled(kNouns, mix_seed(0x686f6d6fULL, l));
    homograph_noun_.emplace_back(nouns.begin(), nouns.begin() + kHomographs);
  }
  for (int l = 0; l < kLanguages; ++l) {
    auto add = [&](int64_t tok, int64_t pos, int c, bool pl) {
      readings_[tok].push_back({pos, c, pl});
    };
    for (int n = 0; n < kNouns; ++n) {
      add(noun_form(l, n, false), kPosNoun, n, false);
      add(noun_form(l, n, true), kPosNoun, n, true);
    }
    for (int a = 0; a < kAdjs; ++a) add(adj_form(l, a), kPosAdj, a, false);
    for (int v = 0; v < kVerbs; ++v) add(verb_form(l, v), kPosVerb, v, false);
    for (int d = 0; d < kDets; ++d) add(det_form(l, d), kPosDet, d, false);
    for (int p = 0; p < kPreps; ++p) add(prep_form(l, p), kPosAdp, p, false);
    for (int w = 1; w <= 3; ++w) add(particle_form(l, w), kPosPart, w, false);
    add(stop_form(l), kPosPunct, 0, false);
  }
}

int64_t Grammar::noun_form(int l, int noun, bool plural) const {
  SEQLAB_CHECK(noun >= 0 && noun < kNouns, "grammar: noun {} out of range", noun);
  return form_.at(l)[(plural ? kSlotNounPl : kSlotNounSg) + noun];
}
int64_t Grammar::adj_form(int l, int adj) const {
  SEQLAB_CHECK(adj >= 0 && adj < kAdjs, "grammar: adjective {} out of range", adj);
  return form_.at(l)[kSlotAdj + adj];
}
int64_t Grammar::verb_form(int l, int verb) const {
  SEQLAB_CHECK(verb >= 0 && verb < kVerbs, "grammar: verb {} out of range", verb);
  const int i = verb - kTransVerbs;  // intransitive index
  if (i >= 0 && i < kHomographs) return noun_form(l, homograph_noun_.at(l)[i], false);
  return form_.at(l)[kSlotVerb + (i < 0 ? verb : verb - kHomographs)];
}
int64_t Grammar::det_form(int l, int det) const {
  SEQLAB_CHECK(det >= 0 && det < kDets, "grammar: determiner {} out of range", det);
  return form_.at(l)[kSlotDet + det];
}
int64_t Grammar::prep_form(int l, int prep) const {
  SEQLAB_CHECK(prep >= 0 && prep < kPreps, "grammar: adposition {} out of range", prep);
  return form_.at(l)[kSlotPrep + prep];
}
int64_t Grammar::particle_form(int l, int which) const {
  SEQLAB_CHECK(which >= 1 && which <= 3, "grammar: particle {} out of range", which);
  return form_.at(l)[kSlotPart + which - 1];
}
int64_t Grammar::stop_form(int l) const {
  return form_.at(l)[kSlotStop];
}

const std::vector<LexReading>& Grammar::readings(int64_t token) const {
  SEQLAB_CHECK(token >= 0 && token < vocab_size(), "grammar: token {} out of range", token);
  return readings_[static_cast<size_t>(token)];
}

int Grammar::language_of(int64_t token) const {
  if (token < kFirstWord || token >= vocab_size()) return -1;
  return static_cast<int>((token - kFirstWord) / kFormsPerLanguage);
}

int64_t Grammar::random_word(uint64_t r) const {
  return kFirstWord +
         static_cast<int64_t>(r % static_cast<uint64_t>(kLanguages * kFormsPerLanguage));
}

Meaning Grammar::sample(uint64_t stream_seed, uint64_t index) const {
  SplitMix d{mix_seed(stream_seed, index)};
  Meaning m;
  m.subj = sample_np(d);
  m.verb = static_cast<int>(d.below(kVerbs));
  if (m.transitive()) m.obj = sample_np(d);
  m.tense = static_cast<int>(d.below(3));
  m.neg = d.coin(kPNeg);
  m.has_pp = d.coin(kPPrep);
  if (m.has_pp) {
    m.prep = static_cast<int>(d.below(kPreps));
    m.pp = sample_np(d);
  }
  return m;
}

void Grammar::append_np(const NounPhrase& np, int l, Rendered& r) const {
  auto put = [&](int64_t tok, int64_t tag) {
    r.tokens.push_back(tok);
    r.tags.push_back(tag);
  };
  if (np.det >= 0) put(det_form(l, np.det), kPosDet);
  const bool adj_after = langs_[l].adj_after_noun;
  if (np.adj >= 0 && !adj_after) put(adj_form(l, np.adj), kPosAdj);
  put(noun_form(l, np.noun, np.plural), kPosNoun);
  if (np.adj >= 0 && adj_after) put(adj_form(l, np.adj), kPosAdj);
}

Rendered Grammar::render(const Meaning& m, int l) const {
  SEQLAB_CHECK(l >= 0 && l < kLanguages, "grammar: language {} out of range", l);
  const auto& g = langs_[l];
  Rendered r;
  auto put = [&](int64_t tok, int64_t tag) {
    r.tokens.push_back(tok);
    r.tags.push_back(tag);
  };
  auto verb_group = [&] {
    auto particles = [&] {
      if (m.tense > 0) put(particle_form(l, m.tense), kPosPart);
      if (m.neg) put(particle_form(l, 3), kPosPart);
    };
    if (!g.particles_after_verb) particles();
    put(verb_form(l, m.verb), kPosVerb);
    if (g.particles_after_verb) particles();
  };
  auto object = [&] {
    if (m.transitive()) append_np(m.obj, l, r);
  };
  for (char c : g.order) {
    if (c == 'S') append_np(m.subj, l, r);
    if (c == 'V') verb_group();
    if (c == 'O') object();
  }
  if (m.has_pp) {
    if (!g.postpositions) put(prep_form(l, m.prep), kPosAdp);
    append_np(m.pp, l, r);
    if (g.postpositions) put(prep_form(l, m.prep), kPosAdp);
  }
  put(stop_form(l), kPosPunct);
  return r;
}

}  // namespace seqlab
