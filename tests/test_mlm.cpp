// Masked-LM pretraining: length batches cover every text once and group neighbours in length;
// training lowers the masked-LM loss on its texts.
#include "seqlab/methods/mlm.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace seqlab;

TEST(LengthBatches, EveryIndexOnceGroupedByLength) {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 103; ++i) lengths.push_back((i * 37) % 11);
  auto b = length_batches(lengths, 8, 5);
  std::vector<int64_t> seen;
  for (const auto& g : b) {
    EXPECT_LE(g.size(), 8u);
    seen.insert(seen.end(), g.begin(), g.end());
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), lengths.size());
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i));
  // Batches are consecutive runs of the length order: sorted by their shortest member, each
  // batch's longest is at most the next batch's shortest.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const auto& g : b) {
    int64_t lo = 1 << 30, hi = -1;
    for (auto i : g) lo = std::min(lo, lengths[i]), hi = std::max(hi, lengths[i]);
    spans.push_back({lo, hi});
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i + 1 < spans.size(); ++i) EXPECT_LE(spans[i].second, spans[i + 1].first);
  EXPECT_EQ(length_batches(lengths, 8, 5), b);
  EXPECT_NE(length_batches(lengths, 8, 6), b);
}

TEST(Mlm, TrainingLowersTheLoss) {
  ModelConfig c;
  c.mixer.arch = "softmax";
  c.mixer.d_model = 32;
  c.mixer.n_head = 2;
  c.mixer.max_len = 32;
  c.n_layer = 1;
  c.mlp_ratio = 2;
  EncoderSpec s;
  s.max_tokens = 24;
  torch::manual_seed(0);
  auto e = make_encoder(c, make_tokenizer("byte"), s);
  const std::vector<std::string> texts = {"the dog barks", "the cat meows", "the cow moos",
                                          "a dog barks",   "a cat meows",   "a cow moos"};
  const double before = mlm_loss(e, texts, 8, 3, 0.3);
  MlmOptions o;
  o.steps = 150;
  o.batch = 6;
  o.lr = 3e-3;
  o.warmup = 10;
  o.mask_prob = 0.3;
  auto r = pretrain_mlm(e, texts, o);
  const double after = mlm_loss(e, texts, 8, 3, 0.3);
  EXPECT_LT(after, before - 1.0) << "before " << before << " after " << after;
  EXPECT_LT(r.last_loss, r.first_loss);
  EXPECT_EQ(r.steps, 150);
  EXPECT_THROW(pretrain_mlm(e, {}, o), Error);
}
