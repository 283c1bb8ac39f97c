// Hugging Face GPT-NeoX (Pythia) import and export (model/hf_neox.h) on the committed fixtures
// tests/data/hf/gpt_neox (F16, rotary_pct 0.25, parallel residual, untied, with the
// attention.bias / masked_bias / rotary_emb.inv_freq buffers and a tokenizer.json) and
// tests/data/hf/gpt_neox_seq (F32, rotary_pct 0.5, sequential residual, tied); reference logits
// and greedy continuations from scripts/make_hf_fixtures.py's own GPT-NeoX math.
#include <gtest/gtest.h>

#include "hf_testing.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/hf_neox.h"
#include "seqlab/model/model_dir.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new HfScratchCleanup);

bool neox_buffer(const std::string& n) {
  auto ends = [&](const std::string& s) {
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".attention.bias") || ends(".attention.masked_bias") || hf_is_rotary_buffer(n);
}

}  // namespace

TEST(HfNeox, ParallelResidualPartialRotaryMatchesReference) {
  auto lm = read_hf(hf_fixture("gpt_neox").string());
  const auto& c = lm.config;
  EXPECT_TRUE(c.mixer.rope);
  EXPECT_EQ(c.mixer.rope_fraction, 0.25);
  EXPECT_EQ(c.mixer.rope_dims(), 4);  // of d_head 16
  EXPECT_TRUE(c.parallel_residual);
  EXPECT_EQ(c.norm, "layer");
  EXPECT_EQ(c.mlp, "plain");
  EXPECT_EQ(c.activation, "gelu");
  EXPECT_TRUE(c.mixer.qkv_bias && c.mixer.o_bias && c.mlp_bias);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.mlp_ratio, 2);
  EXPECT_EQ(lm.sections["task"]["tokenizer"], "hf");
  hf_expect_matches_reference(*lm.model, hf_reference("gpt_neox"));
}

TEST(HfNeox, SequentialResidualTiedMatchesReference) {
  auto lm = read_hf(hf_fixture("gpt_neox_seq").string());
  EXPECT_FALSE(lm.config.parallel_residual);
  EXPECT_TRUE(lm.config.tie_embeddings);
  EXPECT_EQ(lm.config.mixer.rope_dims(), 4);  // 0.5 of d_head 8
  hf_expect_matches_reference(*lm.model, hf_reference("gpt_neox_seq"));
}

TEST(HfNeox, RoundTripsBitwise) {
  auto cfg = hf_expect_round_trip("gpt_neox", neox_buffer);
  const auto orig = hf_read_json((hf_fixture("gpt_neox") / "config.json").string());
  for (const char* key :
       {"architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "max_position_embeddings", "layer_norm_eps", "rotary_pct",
        "rotary_emb_base", "use_parallel_residual", "attention_bias", "tie_word_embeddings",
        "hidden_act", "vocab_size", "rope_scaling", "bos_token_id", "eos_token_id"})
    EXPECT_EQ(cfg[key], orig[key]) << key;
  cfg = hf_expect_round_trip("gpt_neox_seq", [](const std::string& n) {
    return neox_buffer(n) || n == "embed_out.weight";
  });
  EXPECT_EQ(cfg["use_parallel_residual"], false);
  EXPECT_EQ(cfg["tie_word_embeddings"], true);
}

TEST(HfNeox, ConfigRefusals) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"rotary_pct", 0.1875, "rotates 3 dims"},  // 16 * 0.1875 = 3: odd
      {"rope_theta", 500.0, "rotary_emb_base 10000 and rope_theta 500 disagree"},
      {"hidden_act", "relu", "hidden_act 'relu'"},
      {"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}, "rope_scaling type 'dynamic'"},
      {"use_parallel_residual", "yes", "use_parallel_residual"},
      {"architectures", {"GPTNeoXForTokenClassification"}, "GPTNeoXForTokenClassification"},
  };
  for (const auto& c : cases) {
    const auto dir = hf_copy("gpt_neox", std::string("bad_") + c.key);
    hf_edit_config(dir, [&](nlohmann::json& j) { j[c.key] = c.value; });
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, c.needle);
    EXPECT_HF_HAS(err, dir + "/config.json");
  }
}

TEST(HfNeox, NewerConfigNamesAndTanhGelu) {
  // transformers >= 4.4x also writes rope_theta / partial_rotary_factor; equal values are fine.
  const auto dir = hf_copy("gpt_neox", "neox_new_names");
  hf_edit_config(dir, [](nlohmann::json& j) {
    j["rope_theta"] = j["rotary_emb_base"];
    j["partial_rotary_factor"] = j["rotary_pct"];
    j.erase("rotary_emb_base");
    j["hidden_act"] = "gelu_new";
  });
  auto lm = read_hf(dir);
  EXPECT_EQ(lm.config.mixer.rope_theta, 10000.0);
  EXPECT_EQ(lm.config.mixer.rope_fraction, 0.25);
  EXPECT_EQ(lm.config.activation, "gelu_tanh");
}
