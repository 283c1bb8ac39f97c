// The trainer's periodic evaluation budget (train/trainer.h: eval_budget, --eval-tokens) and the
// per-token forward cost it scales by (train/memory_estimate.h), with the estimate's parameter
// count for grouped-query attention and SwiGLU.
#include "seqlab/model/model.h"
#include "seqlab/train/memory_estimate.h"
#include "seqlab/train/trainer.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

// A softmax-attention language model of width D, H heads, L blocks, vocabulary V.
ModelConfig lm(int64_t D, int64_t H, int64_t L, int64_t V, int64_t context) {
  ModelConfig m;
  m.mixer.arch = "softmax";
  m.mixer.d_model = D;
  m.mixer.n_head = H;
  m.mixer.max_len = context;
  m.n_layer = L;
  m.vocab_size = V;
  m.validate();
  return m;
}

ModelConfig gpt2_small() {
  return lm(768, 12, 12, 50257, 1024);
}
ModelConfig small() {
  return lm(128, 4, 4, 4002, 512);
}

}  // namespace

TEST(EvalBudget, ForwardCostCountsBlocksHeadAndAttention) {
  // GPT-2 small at 256 tokens: 2 (12 * 12 D^2 + V D) + 4 * 12 * 256 * D.
  const double D = 768;
  const double expected = 2 * (12 * 12 * D * D + 50257 * D) + 4 * 12 * 256 * D;
  EXPECT_DOUBLE_EQ(forward_flops_per_token(gpt2_small(), 256), expected);
  EXPECT_NEAR(expected, 2.565e8, 1e6);
  // Linear attention keeps no cache: no term in the length.
  auto lin = gpt2_small();
  lin.mixer.arch = "linear";
  lin.validate();
  EXPECT_DOUBLE_EQ(forward_flops_per_token(lin, 256), forward_flops_per_token(lin, 1024));
}

TEST(EvalBudget, SmallModelsKeepTheDefaults) {
  TrainConfig t;
  const auto b = eval_budget(small(), t, 512);
  EXPECT_FALSE(b.scaled);
  EXPECT_EQ(b.sequences, t.eval_size);
  EXPECT_EQ(b.lm_tokens, kDefaultEvalLmTokens);
  EXPECT_LT(forward_flops_per_token(small(), 512), kEvalFlopsPerToken);
}

TEST(EvalBudget, LargeModelsScaleDownToWholeBatches) {
  TrainConfig t;
  t.batch = 4;
  auto b = eval_budget(gpt2_small(), t, 256);
  EXPECT_TRUE(b.scaled);
  EXPECT_EQ(b.sequences, 8);            // 256 * 2^23 / 2.57e8 = 8.4: two batches
  EXPECT_EQ(b.lm_tokens, 8 * 256 + 1);  // 64 windows * 2^23 / 2.57e8 = 2.1 -> two batches
  // Never below one batch, never above the defaults.
  t.batch = 64;
  b = eval_budget(gpt2_small(), t, 256);
  EXPECT_EQ(b.sequences, 64);
  EXPECT_EQ(b.lm_tokens, 64 * 256 + 1);
  t.batch = 512;
  b = eval_budget(gpt2_small(), t, 256);
  EXPECT_EQ(b.sequences, t.eval_size);
  EXPECT_EQ(b.lm_tokens, kDefaultEvalLmTokens);
}

TEST(EvalBudget, ExplicitTokensBoundBothPasses) {
  TrainConfig t;
  t.eval_tokens = 3000;
  auto b = eval_budget(small(), t, 256);
  EXPECT_FALSE(b.scaled);
  EXPECT_EQ(b.lm_tokens, 3000);
  EXPECT_EQ(b.sequences, 11);  // 3000 / 256
  t.eval_tokens = 100;         // less than one sequence: still one
  EXPECT_EQ(eval_budget(small(), t, 256).sequences, 1);
  t.eval_tokens = 1 << 30;  // more than --eval-size sequences: --eval-size
  EXPECT_EQ(eval_budget(gpt2_small(), t, 256).sequences, t.eval_size);
  t.eval_tokens = 1;
  EXPECT_THROW(t.validate(), Error);
  t.eval_tokens = -5;
  EXPECT_THROW(t.validate(), Error);
}

TEST(EvalBudget, MemoryEstimateCountsKvHeadsAndSwiglu) {
  // A Llama-shaped model: the estimate's block weights equal the real ones but for the norms.
  ModelConfig m;
  m.mixer.arch = "softmax";
  m.mixer.d_model = 48;
  m.mixer.n_head = 6;
  m.mixer.n_kv_head = 2;
  m.mixer.rope = true;
  m.mixer.qkv_bias = false;
  m.mixer.o_bias = false;
  m.mixer.max_len = 64;
  m.mlp = "swiglu";
  m.d_mlp = 128;
  m.mlp_bias = false;
  m.norm = "rms";
  m.n_layer = 3;
  m.vocab_size = 100;
  m.validate();
  SeqModel model(m);
  const double D = 48, real = static_cast<double>(count_parameters(*model));
  const double real_blocks = real - 100 * D - D;  // embeddings and ln_f
  // The estimate also counts a head and the context's positions (the upper bound it keeps).
  const double est_blocks = estimate_training_memory(m, 1, 1).weights / 16 - (100 + 100 + 64) * D;
  EXPECT_NEAR(est_blocks, real_blocks, 3 * 2 * D);  // 2 norm weights per block
  EXPECT_GT(est_blocks, 0.95 * real_blocks);
  // 3 I D for SwiGLU, k and v at G/H of D x D.
  EXPECT_DOUBLE_EQ(est_blocks, 3 * (2 * D * D + 2 * D * D / 3 + 3 * 128 * D));
}
