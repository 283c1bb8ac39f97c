// The WordNet dictionary: entries (multi-word, lower case, several senses), their split, held-out
// synsets, and Wu–Palmer similarity recomputed by hand on a fake hierarchy and on real WordNet.
#include "seqlab/text/dictionary.h"

#include "seqlab/core/error.h"

#include "dictionary_testing.h"
#include "split_testing.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

std::shared_ptr<const WordNet> fake() {
  static auto wn = std::make_shared<const WordNet>(write_fake_wordnet("fake"));
  return wn;
}

int32_t noun(const WordNet& wn, uint32_t offset) {
  return static_cast<int32_t>(wn.find('n', offset));
}

}  // namespace

TEST(Dictionary, EntriesFromLemmas) {
  Dictionary d(fake());
  std::vector<std::string> words;
  for (const auto& e : d.entries()) words.push_back(e.word);
  EXPECT_EQ(words, (std::vector<std::string>{
                       "able", "animal", "artifact", "bob",   "breathe",      "cas",    "cat",
                       "cot",  "cut",    "dag",      "dog",   "domestic dog", "entity", "fido",
                       "fit",  "live",   "pet",      "puppy", "quadruped",    "quickly"}));
  const auto& dog = d.entries()[d.find("dog")];
  const auto& wn = d.wordnet();
  EXPECT_EQ(dog.synsets, (std::vector<int32_t>{noun(wn, 500), noun(wn, 800)}));
  EXPECT_EQ(d.definition(noun(wn, 500)), "a member of the genus Canis");
  EXPECT_EQ(d.find("Dog"), -1);
  EXPECT_GE(d.find("domestic dog"), 0);
  for (const auto& e : d.entries()) EXPECT_EQ(e.split, expected_split(e.word)) << e.word;
  size_t total = 0;
  for (auto s : {Split::train, Split::valid, Split::test}) total += d.split_entries(s).size();
  EXPECT_EQ(total, d.entries().size());
  // Nouns only.
  Dictionary nouns(fake(), "n");
  EXPECT_EQ(nouns.find("breathe"), -1);
  EXPECT_GE(nouns.find("cat"), 0);
}

TEST(Dictionary, HeldOutSynsetsHaveNoTrainLemma) {
  Dictionary d(fake());
  const auto& wn = d.wordnet();
  EXPECT_TRUE(d.heldout_synset(noun(wn, 1000)));  // cut: a test word
  EXPECT_FALSE(d.heldout_synset(noun(wn, 500)));  // dog (valid) shares it with domestic dog (train)
  const auto& ss = d.wordnet().synsets();
  for (size_t s = 0; s < ss.size(); ++s) {
    const auto& en = d.synset_entries(static_cast<int32_t>(s));
    bool train = false;
    for (auto i : en) train = train || d.entries()[i].split == Split::train;
    EXPECT_EQ(d.heldout_synset(static_cast<int32_t>(s)), !en.empty() && !train) << s;
  }
}

TEST(Dictionary, EmptyIsAnError) {
  // No synset of the parts of speech asked for: no entry.
  try {
    Dictionary d(fake(), "x");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  // WordNet files without synsets are refused before a dictionary is built from them.
  EXPECT_THROW(WordNet(write_empty_wordnet("empty")), Error);
}

TEST(WuPalmer, HandComputedOnFakeHierarchy) {
  const auto& wn = *fake();
  WuPalmer wp(wn);
  const int32_t entity = noun(wn, 100), animal = noun(wn, 200), pet = noun(wn, 300),
                quad = noun(wn, 400), dog = noun(wn, 500), cat = noun(wn, 600),
                puppy = noun(wn, 700), artifact = noun(wn, 800);
  EXPECT_EQ(wp.depth(entity), 1);
  EXPECT_EQ(wp.depth(animal), 2);
  EXPECT_EQ(wp.depth(pet), 2);
  EXPECT_EQ(wp.depth(quad), 3);
  EXPECT_EQ(wp.depth(dog), 4);  // the longest path: dog -> quadruped -> animal -> entity
  EXPECT_EQ(wp.depth(puppy), 5);
  const auto anc = wp.ancestors(puppy);
  EXPECT_EQ(anc.size(), 6u);
  EXPECT_EQ(anc.at(puppy), 0);
  EXPECT_EQ(anc.at(dog), 1);
  EXPECT_EQ(anc.at(animal), 2);  // the direct dog -> animal edge, not via quadruped
  EXPECT_EQ(anc.at(pet), 2);
  EXPECT_EQ(anc.at(entity), 3);
  // dog, cat: through animal 2*2 / (1 + 1 + 2*2); through entity 2*1 / (2 + 2 + 2).
  EXPECT_DOUBLE_EQ(*wp.similarity(dog, cat), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(*wp.similarity(cat, dog), 4.0 / 6.0);
  // puppy under dog: 2*4 / (1 + 0 + 8).
  EXPECT_DOUBLE_EQ(*wp.similarity(puppy, dog), 8.0 / 9.0);
  // puppy, cat: through animal, 2*2 / (2 + 1 + 4).
  EXPECT_DOUBLE_EQ(*wp.similarity(puppy, cat), 4.0 / 7.0);
  // dog, artifact: only entity, 2 / (2 + 1 + 2).
  EXPECT_DOUBLE_EQ(*wp.similarity(dog, artifact), 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(*wp.similarity(cat, cat), 1.0);
  // Two verbs in separate trees share nothing.
  EXPECT_FALSE(wp.similarity(static_cast<int32_t>(wn.find('v', 100)),
                             static_cast<int32_t>(wn.find('v', 200))));
}

// dog.n.01 and cat.n.01 meet at carnivore.n.01, two steps from each; NLTK's wup gives 6/7.
TEST(WuPalmer, RealWordNetDogCat) {
  if (!std::filesystem::exists(wordnet_dir() + "/data.noun"))
    GTEST_SKIP() << "no WordNet in " << wordnet_dir();
  auto wn = load_wordnet();
  WuPalmer wp(*wn);
  const auto dog = static_cast<int32_t>(wn->find('n', 2084071));
  const auto cat = static_cast<int32_t>(wn->find('n', 2121620));
  ASSERT_GE(dog, 0);
  ASSERT_GE(cat, 0);
  ASSERT_EQ(wn->synsets()[dog].lemmas[0], "dog");
  ASSERT_EQ(wn->synsets()[cat].lemmas[0], "cat");
  EXPECT_NEAR(*wp.similarity(dog, cat), 6.0 / 7.0, 1e-12);
  Dictionary d(wn);
  EXPECT_GT(d.entries().size(), 140000u);
  EXPECT_GE(d.find("domestic dog"), 0);
}
