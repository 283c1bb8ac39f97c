// The synthetic multilingual corpus (tasks/grammar.h), checked by an independent reader: each
// sentence is parsed back from its tokens alone, with the lexicon and one regular expression per
// language over part-of-speech letters. Every tagging the lexicon allows (homographs have two
// readings) is tried; exactly one must be grammatical, and it must equal the gold tags. The parse
// then gives the subject (for the label) and the concepts (for parallelism across languages).
#include "seqlab/tasks/grammar.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <tuple>

namespace seqlab {
namespace {

// D det, A adj, N noun, V verb, T particle, P adposition, . full stop. The first group is the
// subject noun phrase.
const char* kPatterns[Grammar::kLanguages] = {
    // L0: SVO, adjective before the noun, prepositions, particles before the verb
    "^(D?A?N)T{0,2}V(?:D?A?N)?(?:PD?A?N)?\\.$",
    // L1: SOV, adjective after the noun, postpositions, particles after the verb
    "^(D?NA?)(?:D?NA?)?VT{0,2}(?:D?NA?P)?\\.$",
    // L2: VOS: the subject follows the optional object
    "^T{0,2}V(?:D?A?N)?(D?A?N)(?:PD?A?N)?\\.$",
};
const char kLetters[] = "DANVTP.";

struct Parse {
  std::vector<int64_t> tags;
  int64_t label = -1;
  // (pos, concept, plural) of every content word, sorted: comparable across languages.
  std::multiset<std::tuple<int64_t, int, bool>> concepts;
};

// Every grammatical reading of a sentence.
std::vector<Parse> parse(const Grammar& g, int lang, const std::vector<int64_t>& toks) {
  std::vector<const std::vector<LexReading>*> rs;
  size_t combos = 1;
  for (auto t : toks) {
    rs.push_back(&g.readings(t));
    EXPECT_FALSE(rs.back()->empty()) << "token " << t << " has no reading";
    EXPECT_EQ(g.language_of(t), lang) << "token " << t << " of another language";
    combos *= std::max<size_t>(1, rs.back()->size());
  }
  std::vector<Parse> out;
  const std::regex re(kPatterns[lang]);
  for (size_t c = 0; c < combos; ++c) {
    size_t k = c;
    std::string s;
    std::vector<const LexReading*> pick;
    for (auto* r : rs) {
      if (r->empty()) return out;
      pick.push_back(&(*r)[k % r->size()]);
      k /= r->size();
      s += kLetters[pick.back()->pos];
    }
    std::smatch m;
    if (!std::regex_match(s, m, re)) continue;
    Parse p;
    for (auto* r : pick) {
      p.tags.push_back(r->pos);
      if (r->pos != kPosPunct) p.concepts.insert({r->pos, r->concept_id, r->plural});
    }
    // The subject's noun sits inside group 1.
    for (size_t i = m.position(1); i < m.position(1) + m.length(1); ++i)
      if (pick[i]->pos == kPosNoun) p.label = pick[i]->plural ? 1 : 0;
    out.push_back(p);
  }
  return out;
}

TEST(Grammar, EveryTagAndLabelFromAnIndependentParse) {
  Grammar g;
  int homograph_nouns = 0, homograph_verbs = 0, vos_first_noun_differs = 0;
  std::vector<int> labels(2, 0);
  for (uint64_t i = 0; i < 3000; ++i) {
    const auto m = g.sample(7, i);
    std::multiset<std::tuple<int64_t, int, bool>> first;
    for (int l = 0; l < Grammar::kLanguages; ++l) {
      const auto r = g.render(m, l);
      ASSERT_EQ(r.tokens.size(), r.tags.size());
      ASSERT_LE(static_cast<int64_t>(r.tokens.size()), Grammar::kMaxSentence);
      const auto ps = parse(g, l, r.tokens);
      ASSERT_EQ(ps.size(), 1u) << "sentence " << i << " language " << l << ": " << ps.size()
                               << " grammatical readings";
      EXPECT_EQ(ps[0].tags, r.tags) << "sentence " << i << " language " << l;
      EXPECT_EQ(ps[0].label, Grammar::label(m)) << "sentence " << i << " language " << l;
      // Parallel: the same concepts (with numbers) in every language.
      if (l == 0)
        first = ps[0].concepts;
      else
        EXPECT_EQ(ps[0].concepts, first) << "sentence " << i << " language " << l;
      for (size_t t = 0; t < r.tokens.size(); ++t)
        if (g.readings(r.tokens[t]).size() == 2)
          (r.tags[t] == kPosNoun ? homograph_nouns : homograph_verbs)++;
      if (l == 2 && m.transitive()) {
        for (size_t t = 0; t < r.tokens.size(); ++t)
          if (r.tags[t] == kPosNoun) {
            vos_first_noun_differs += g.readings(r.tokens[t]).back().plural != m.subj.plural;
            break;
          }
      }
    }
    labels[Grammar::label(m)]++;
  }
  // The corpus has what the tasks need: ambiguous forms read both ways, a balanced label, and
  // sentences where "the first noun" is not the subject.
  EXPECT_GT(homograph_nouns, 100);
  EXPECT_GT(homograph_verbs, 100);
  EXPECT_GT(labels[0], 1300);
  EXPECT_GT(labels[1], 1300);
  EXPECT_GT(vos_first_noun_differs, 300);
}

TEST(Grammar, WordOrdersAsDocumented) {
  Grammar g;
  Meaning m;
  m.subj = {0, false, 1, 0};  // det adj noun
  m.verb = 0;                 // transitive
  m.obj = {1, true, -1, -1};
  m.tense = 1;
  m.neg = true;
  auto tags = [&](int l) { return g.render(m, l).tags; };
  using V = std::vector<int64_t>;
  EXPECT_EQ(tags(0),
            (V{kPosDet, kPosAdj, kPosNoun, kPosPart, kPosPart, kPosVerb, kPosNoun, kPosPunct}));
  EXPECT_EQ(tags(1),
            (V{kPosDet, kPosNoun, kPosAdj, kPosNoun, kPosVerb, kPosPart, kPosPart, kPosPunct}));
  EXPECT_EQ(tags(2),
            (V{kPosPart, kPosPart, kPosVerb, kPosNoun, kPosDet, kPosAdj, kPosNoun, kPosPunct}));
  const auto r2 = g.render(m, 2);
  EXPECT_EQ(r2.tokens[3], g.noun_form(2, 1, true));  // the object comes first in VOS
  EXPECT_EQ(r2.tokens[0], g.particle_form(2, 1));
}

TEST(Grammar, DeterministicAndLanguagesDiffer) {
  Grammar a, b;
  for (uint64_t i = 0; i < 50; ++i)
    for (int l = 0; l < Grammar::kLanguages; ++l)
      EXPECT_EQ(a.render(a.sample(3, i), l).tokens, b.render(b.sample(3, i), l).tokens);
  // Other seeds give other sentences.
  int same = 0;
  for (uint64_t i = 0; i < 50; ++i)
    same += a.render(a.sample(3, i), 0).tokens == a.render(a.sample(4, i), 0).tokens;
  EXPECT_LT(same, 5);
  // Vocabularies are disjoint and not aligned by id: the same concept has different offsets.
  std::set<int64_t> offsets;
  for (int l = 0; l < Grammar::kLanguages; ++l)
    offsets.insert(a.noun_form(l, 0, false) - Grammar::kFirstWord - l * Grammar::kFormsPerLanguage);
  EXPECT_GT(offsets.size(), 1u);
  EXPECT_EQ(a.readings(Grammar::kPad).size(), 0u);
  EXPECT_EQ(a.language_of(Grammar::kMask), -1);
}

}  // namespace
}  // namespace seqlab
