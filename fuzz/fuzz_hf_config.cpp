// Fuzzes the Hugging Face readers of import-hf on arbitrary bytes: config.json (parse_hf_config,
// then the family's model_config_from_hf for gpt2, llama, mistral, qwen2, gpt_neox) and
// model.safetensors.index.json (parse_hf_shard_index); each input goes to both.
// Oracle: an accepted config, written back as the config.json export-hf writes for its family and
// read again, gives the same seqlab ModelConfig.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/model/hf_gpt2.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/hf_llama.h"
#include "seqlab/model/hf_neox.h"

using namespace seqlab;

namespace {

nlohmann::json exported(const std::string& model_type, const ModelConfig& c) {
  if (model_type == "gpt2") return hf_config_from_gpt2(c);
  if (model_type == "gpt_neox") return hf_config_from_neox(c);
  return hf_config_from_llama(c);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const nlohmann::json llama = {{"architectures", {"LlamaForCausalLM"}},
                                {"model_type", "llama"},
                                {"hidden_size", 48},
                                {"intermediate_size", 128},
                                {"num_attention_heads", 4},
                                {"num_key_value_heads", 2},
                                {"num_hidden_layers", 2},
                                {"max_position_embeddings", 64},
                                {"rms_norm_eps", 1e-6},
                                {"rope_theta", 500000.0},
                                {"rope_scaling", nullptr},
                                {"tie_word_embeddings", false},
                                {"vocab_size", 128}};
  nlohmann::json mistral = llama;
  mistral["model_type"] = "mistral";
  mistral["architectures"] = {"MistralForCausalLM"};
  mistral["sliding_window"] = 16;
  nlohmann::json qwen2 = llama;
  qwen2["model_type"] = "qwen2";
  qwen2["architectures"] = {"Qwen2ForCausalLM"};
  qwen2["use_sliding_window"] = false;
  const nlohmann::json neox = {{"architectures", {"GPTNeoXForCausalLM"}},
                               {"model_type", "gpt_neox"},
                               {"hidden_size", 64},
                               {"intermediate_size", 128},
                               {"num_attention_heads", 4},
                               {"num_hidden_layers", 2},
                               {"max_position_embeddings", 64},
                               {"layer_norm_eps", 1e-5},
                               {"rotary_pct", 0.25},
                               {"rotary_emb_base", 10000},
                               {"use_parallel_residual", true},
                               {"hidden_act", "gelu"},
                               {"vocab_size", 128}};
  const nlohmann::json gpt2 = {{"architectures", {"GPT2LMHeadModel"}},
                               {"model_type", "gpt2"},
                               {"n_embd", 32},
                               {"n_head", 4},
                               {"n_layer", 2},
                               {"n_positions", 64},
                               {"n_inner", nullptr},
                               {"activation_function", "gelu_new"},
                               {"layer_norm_epsilon", 1e-5},
                               {"vocab_size", 50257}};
  const nlohmann::json index = {{"metadata", {{"total_size", 1024}}},
                                {"weight_map",
                                 {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                                  {"model.norm.weight", "model-00002-of-00002.safetensors"}}}};
  fuzz::maybe_write_seeds(
      {llama.dump(2), mistral.dump(2), qwen2.dump(2), neox.dump(2), gpt2.dump(2), index.dump(2)});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    parse_hf_shard_index(text, "model.safetensors.index.json");
  } catch (const Error&) {
  }
  nlohmann::json hf;
  ModelConfig c;
  try {
    hf = parse_hf_config(text, "config.json");
    c = model_config_from_hf(hf, "config.json");
  } catch (const Error&) {
    return 0;
  }
  const std::string type = hf["model_type"].get<std::string>();
  const std::string again_type = type == "gpt2" || type == "gpt_neox" ? type : llama_export_type(c);
  try {
    const auto again = model_config_from_hf(exported(type, c), "exported");
    if (again.to_json() != c.to_json())
      fuzz::finding(fmt::format("{} config changes when exported and read back:\n{}\n{}",
                                again_type, c.to_json().dump(), again.to_json().dump()));
  } catch (const Error& e) {
    fuzz::finding(
        fmt::format("{} config as exported does not read back: {}", again_type, e.what()));
  }
  return 0;
}
