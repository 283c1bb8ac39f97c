// DefSent and DefSent+: the examples each builds from a dictionary, entry embeddings as means of
// definition embeddings, whitening to identity covariance, and that both objectives lower their
// loss on a tiny setup (DefSent leaving its prediction layer untouched).
#include "seqlab/methods/defsent.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_trainer.h"

#include "dictionary_testing.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.mixer.arch = "softmax";
  c.mixer.d_model = 32;
  c.mixer.n_head = 2;
  c.mixer.max_len = 48;
  c.n_layer = 1;
  c.mlp_ratio = 2;
  return c;
}

Encoder encoder(std::shared_ptr<const Tokenizer> tok) {
  EncoderSpec s;
  s.max_tokens = 40;
  torch::manual_seed(0);
  return make_encoder(tiny(), std::move(tok), s);
}

std::shared_ptr<const Dictionary> fake_dict() {
  static auto d = std::make_shared<const Dictionary>(
      std::make_shared<const WordNet>(write_fake_wordnet("defsent")));
  return d;
}

std::vector<int32_t> all_entries(const Dictionary& d) {
  std::vector<int32_t> v(d.entries().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  return v;
}

}  // namespace

TEST(DefSent, OneTokenExamplesNeedOneTokenWords) {
  const auto& d = *fake_dict();
  // A BPE that has learned " dog" and " cat" as single tokens, but not " domestic".
  const auto dir = dict_scratch("bpe");
  BpeTrainOptions bo;
  bo.vocab_size = 280;
  bo.progress = false;
  std::vector<std::string> docs;
  for (int i = 0; i < 50; ++i) docs.push_back("a dog and a cat");
  save_bpe(train_bpe(docs, bo), dir.string());
  auto tok = make_tokenizer("bpe:" + dir.string());
  ASSERT_EQ(tok->encode(" dog").size(), 1u);
  ASSERT_EQ(tok->encode(" cat").size(), 1u);
  ASSERT_GT(tok->encode(" domestic dog").size(), 1u);
  auto ex = one_token_examples(d, all_entries(d), *tok);
  std::map<std::string, int64_t> count;
  for (const auto& x : ex) {
    const auto word = tok->decode({x.target});
    ++count[word];
  }
  EXPECT_EQ(count[" dog"], 2);  // two senses: the animal and the (fake) artifact
  EXPECT_EQ(count[" cat"], 1);
  for (const auto& [w, n] : count) EXPECT_EQ(tok->encode(w).size(), 1u) << w;
  // DefSent+ examples: every definition of every entry, target = position in the list.
  const auto ee = entry_examples(d, {d.find("dog"), d.find("cat")});
  ASSERT_EQ(ee.size(), 3u);
  EXPECT_EQ(ee[0].definition, "a member of the genus Canis");
  EXPECT_EQ(ee[1].definition, "a man-made object");
  EXPECT_EQ(ee[2].target, 1);
}

TEST(DefSent, EntryEmbeddingIsMeanOfItsDefinitions) {
  const auto& d = *fake_dict();
  auto e = encoder(make_tokenizer("byte"));
  const std::vector<int32_t> entries = {d.find("dog"), d.find("cat")};
  auto E = entry_embeddings(e, d, entries);
  ASSERT_EQ(E.sizes(), (std::vector<int64_t>{2, 32}));
  auto defs = e.embed({"a member of the genus Canis", "a man-made object", "feline mammal"});
  EXPECT_LE((E[0] - (defs[0] + defs[1]) / 2).abs().max().item<double>(), 1e-6);
  EXPECT_LE((E[1] - defs[2]).abs().max().item<double>(), 1e-6);
}

TEST(DefSent, WhiteningGivesIdentityCovariance) {
  torch::manual_seed(1);
  auto A = torch::randn({8, 8}, torch::kDouble);
  auto X = (torch::randn({400, 8}, torch::kDouble).matmul(A) + 3.0).to(torch::kFloat);
  auto W = whiten(X).to(torch::kDouble);
  EXPECT_LE(W.mean(0).abs().max().item<double>(), 1e-4);
  auto cov = W.t().matmul(W) / (W.size(0) - 1);
  EXPECT_LE((cov - torch::eye(8, torch::kDouble)).abs().max().item<double>(), 1e-3) << cov;
  EXPECT_THROW(whiten(X.slice(0, 0, 1)), Error);
}

TEST(DefSent, TrainingLowersTheLossAndKeepsTheHeadFrozen) {
  auto e = encoder(make_tokenizer("byte"));
  const std::vector<DefExample> ex = {
      {"a member of the genus Canis", 'd'}, {"feline mammal", 'c'},
      {"an animal with four feet", 'q'},    {"a man-made object", 'a'},
      {"that which exists", 'e'},           {"a young dog", 'p'}};
  const double before = defsent_loss(e, ex, 4);
  auto head_w = e.model()->head->weight.clone();
  auto wte = e.model()->wte->weight.clone();
  DefTrainOptions o;
  o.steps = 60;
  o.batch = 3;
  o.lr = 3e-3;
  o.warmup = 5;
  auto r = train_defsent(e, ex, o);
  const double after = defsent_loss(e, ex, 4);
  EXPECT_LT(after, before - 1.0) << "before " << before << " after " << after;
  EXPECT_LT(r.last_loss, r.first_loss);
  EXPECT_TRUE(torch::equal(e.model()->head->weight, head_w)) << "the prediction layer moved";
  EXPECT_FALSE(torch::equal(e.model()->wte->weight, wte)) << "the encoder did not train";
  for (auto& p : e.model()->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_THROW(train_defsent(e, {{"x", 100000}}, o), Error);
}

TEST(DefSent, PlusTrainingLowersTheLoss) {
  const auto& d = *fake_dict();
  auto e = encoder(make_tokenizer("byte"));
  const auto entries = all_entries(d);
  const auto ex = entry_examples(d, entries);
  auto E = whiten(entry_embeddings(e, d, entries));
  const double before = entries_loss(e, ex, E, 0.1, 4);
  DefTrainOptions o;
  o.steps = 80;
  o.batch = 4;
  o.lr = 3e-3;
  o.warmup = 5;
  o.temperature = 0.1;
  auto r = train_to_entries(e, ex, E, o);
  const double after = entries_loss(e, ex, E, 0.1, 4);
  EXPECT_LT(after, before - 0.5) << "before " << before << " after " << after;
  EXPECT_LT(r.last_loss, r.first_loss);
  EXPECT_THROW(train_to_entries(e, ex, E.slice(1, 0, 4), o), Error);
}
