// Hugging Face Llama / Qwen2 / Mistral import and export (model/hf_llama.h) on the committed
// fixtures tests/data/hf/{llama,qwen2,mistral}: tiny random checkpoints in the hub layout (BF16
// and sharded for Llama, BF16 tied with q/k/v biases for Qwen2, F32 multi-query for Mistral, each
// with the rotary inv_freq buffers the hub files carry), whose reference logits and greedy
// continuations scripts/make_hf_fixtures.py computed with the families' own math in Python.
#include <gtest/gtest.h>

#include "hf_testing.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/hf_llama.h"
#include "seqlab/model/model_dir.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new HfScratchCleanup);

bool rotary_or_tied_head(const std::string& name, bool tied) {
  return hf_is_rotary_buffer(name) || (tied && name == "lm_head.weight");
}

}  // namespace

TEST(HfLlama, LlamaGqaBf16ShardedMatchesReference) {
  std::vector<std::string> notes;
  auto lm = read_hf(hf_fixture("llama").string(), &notes);
  const auto& c = lm.config;
  EXPECT_EQ(c.mixer.arch, "softmax");
  EXPECT_TRUE(c.mixer.rope);
  EXPECT_EQ(c.mixer.rope_theta, 500000.0);
  EXPECT_EQ(c.mixer.rope_dims(), 12);
  EXPECT_EQ(c.mixer.n_head, 4);
  EXPECT_EQ(c.mixer.kv_heads(), 2);
  EXPECT_EQ(c.norm, "rms");
  EXPECT_EQ(c.norm_eps, 1e-6);
  EXPECT_EQ(c.mlp, "swiglu");
  EXPECT_EQ(c.mlp_width(), 128);  // not a multiple of d_model 48: d_mlp
  EXPECT_EQ(c.d_mlp, 128);
  EXPECT_FALSE(c.mixer.qkv_bias || c.mixer.o_bias || c.mlp_bias);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.resolved_pos(true), "none");
  EXPECT_EQ(c.mixer.max_len, 64);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(lm.sections["task"]["tokenizer"], "hf");  // tokenizer.json beside the checkpoint
  EXPECT_EQ(lm.sections["task"]["task"], "lm");
  EXPECT_EQ(lm.sections["hf"]["config"]["model_type"], "llama");
  hf_expect_matches_reference(*lm.model, hf_reference("llama"));
}

TEST(HfLlama, Qwen2BiasesTiedMatchesReference) {
  auto lm = read_hf(hf_fixture("qwen2").string());
  const auto& c = lm.config;
  EXPECT_TRUE(c.mixer.qkv_bias);
  EXPECT_FALSE(c.mixer.o_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.mlp_width(), 96);
  EXPECT_EQ(c.mlp_ratio, 3);                   // a multiple of d_model 32: mlp_ratio
  EXPECT_FALSE(lm.sections.contains("task"));  // no tokenizer.json
  hf_expect_matches_reference(*lm.model, hf_reference("qwen2"));
}

TEST(HfLlama, MistralMultiQueryMatchesReference) {
  auto lm = read_hf(hf_fixture("mistral").string());
  EXPECT_EQ(lm.config.mixer.kv_heads(), 1);
  EXPECT_EQ(lm.config.mixer.max_len, 64);  // sliding_window null
  hf_expect_matches_reference(*lm.model, hf_reference("mistral"));
}

TEST(HfLlama, MistralSlidingWindowLimitsTheContext) {
  const auto dir = hf_copy("mistral", "mistral_window");
  hf_edit_config(dir, [](nlohmann::json& j) { j["sliding_window"] = 24; });
  std::vector<std::string> notes;
  auto lm = read_hf(dir, &notes);
  EXPECT_EQ(lm.config.mixer.max_len, 24);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HF_HAS(notes[0], "sliding_window 24");
  EXPECT_HF_HAS(notes[0], "config.json");
  // Up to the window (16 prompt + 8 greedy tokens), full attention is the sliding-window
  // attention: the reference holds.
  hf_expect_matches_reference(*lm.model, hf_reference("mistral"));

  hf_edit_config(dir, [](nlohmann::json& j) { j["sliding_window"] = 4096; });  // >= P: no limit
  notes.clear();
  EXPECT_EQ(read_hf(dir, &notes).config.mixer.max_len, 64);
  EXPECT_TRUE(notes.empty());
}

TEST(HfLlama, RoundTripsBitwise) {
  auto cfg = hf_expect_round_trip(
      "llama", [](const std::string& n) { return rotary_or_tied_head(n, false); });
  const auto orig = hf_read_json((hf_fixture("llama") / "config.json").string());
  EXPECT_EQ(cfg["architectures"], orig["architectures"]);
  for (const char* key : {"model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
                          "rms_norm_eps", "rope_theta", "tie_word_embeddings", "attention_bias",
                          "mlp_bias", "hidden_act", "vocab_size", "rope_scaling"})
    EXPECT_EQ(cfg[key], orig[key]) << key;

  cfg = hf_expect_round_trip("qwen2",
                             [](const std::string& n) { return rotary_or_tied_head(n, true); });
  EXPECT_EQ(cfg["model_type"], "qwen2");
  EXPECT_EQ(cfg["architectures"][0], "Qwen2ForCausalLM");
  EXPECT_EQ(cfg["tie_word_embeddings"], true);
  EXPECT_EQ(cfg["use_sliding_window"], false);

  // Mistral's layout is Llama's: it exports as llama.
  cfg = hf_expect_round_trip("mistral",
                             [](const std::string& n) { return rotary_or_tied_head(n, false); });
  EXPECT_EQ(cfg["model_type"], "llama");
  EXPECT_EQ(cfg["num_key_value_heads"], 1);
}

TEST(HfLlama, TokenizerFilesTravel) {
  const auto out = hf_tmp("tok_model"), back = hf_tmp("tok_hf");
  import_hf(hf_fixture("llama").string(), out);
  for (const char* f : kHfTokenizerFiles) {
    EXPECT_EQ(read_file(out + "/" + f), read_file((hf_fixture("llama") / f).string())) << f;
  }
  EXPECT_EQ(read_config_json(out)["task"]["tokenizer"], "hf");
  export_hf(out, back);
  for (const char* f : kHfTokenizerFiles)
    EXPECT_EQ(read_file(back + "/" + f), read_file((hf_fixture("llama") / f).string())) << f;
}

TEST(HfLlama, ConfigRefusals) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"hidden_act", "gelu", "hidden_act 'gelu'"},
      {"head_dim", 16, "head_dim 16"},
      {"partial_rotary_factor", 0.5, "partial_rotary_factor"},
      {"num_key_value_heads", 3, "num_key_value_heads 3"},
      {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}, "rope_scaling type 'llama3'"},
      {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}, "rope_scaling type 'linear'"},
      {"architectures", {"LlamaForSequenceClassification"}, "LlamaForSequenceClassification"},
      {"hidden_size", "48", "hidden_size"},
      {"rms_norm_eps", "x", "rms_norm_eps"},
  };
  for (const auto& c : cases) {
    const auto dir = hf_copy("llama", std::string("bad_") + c.key);
    hf_edit_config(dir, [&](nlohmann::json& j) { j[c.key] = c.value; });
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, c.needle);
    EXPECT_HF_HAS(err, dir + "/config.json");
  }
  const auto dir = hf_copy("qwen2", "bad_qwen_window");
  hf_edit_config(dir, [](nlohmann::json& j) { j["use_sliding_window"] = true; });
  const auto err = hf_error_of([&] { read_hf(dir); });
  EXPECT_HF_HAS(err, "use_sliding_window");
  EXPECT_HF_HAS(err, dir + "/config.json");
}

TEST(HfLlama, TiedHeadInTheFileMustEqualTheEmbedding) {
  const auto dir = hf_copy("qwen2", "qwen_head");
  auto f = load_safetensors(dir + "/model.safetensors");
  f.tensors["lm_head.weight"] = f.tensors.at("model.embed_tokens.weight").clone();
  save_safetensors(dir + "/model.safetensors", f.tensors, f.metadata);
  hf_expect_matches_reference(*read_hf(dir).model, hf_reference("qwen2"));  // equal: accepted
  f.tensors["lm_head.weight"] = f.tensors["lm_head.weight"] * 2;
  save_safetensors(dir + "/model.safetensors", f.tensors, f.metadata);
  const auto err = hf_error_of([&] { read_hf(dir); });
  EXPECT_HF_HAS(err, "lm_head.weight differs");
  EXPECT_HF_HAS(err, "model.safetensors");
}

TEST(HfLlama, MaxContextCapsTheKvCache) {
  std::vector<std::string> notes;
  auto lm = read_hf(hf_fixture("llama").string(), &notes, /*max_context=*/24);
  EXPECT_EQ(lm.config.mixer.max_len, 24);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HF_HAS(notes[0], "max_context 24");
  hf_expect_matches_reference(*lm.model, hf_reference("llama"));  // 16 + 8 tokens fit
  EXPECT_EQ(read_hf(hf_fixture("llama").string(), nullptr, 1000).config.mixer.max_len, 64);
}
