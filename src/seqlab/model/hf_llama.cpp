#include "seqlab/model/hf_llama.h"

#include "seqlab/core/error.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>

#include <cmath>

namespace seqlab {

namespace {

std::string architecture_of(const std::string& model_type) {
  if (model_type == "mistral") return "MistralForCausalLM";
  if (model_type == "qwen2") return "Qwen2ForCausalLM";
  return "LlamaForCausalLM";
}

// The family's tensors (one-to-one renames) for a model of config c.
std::vector<HfName> llama_names(const ModelConfig& c) {
  const int64_t D = c.mixer.d_model, V = c.vocab_size, I = c.mlp_width();
  const int64_t KV = c.mixer.kv_heads() * c.mixer.d_head();
  std::vector<HfName> n = {{"model.embed_tokens.weight", "wte.weight", {V, D}},
                           {"model.norm.weight", "ln_f.weight", {D}}};
  if (!c.tie_embeddings) n.push_back({"lm_head.weight", "head.weight", {V, D}});
  auto linear = [&](const std::string& hf, const std::string& sl, int64_t out, int64_t in,
                    bool bias) {
    n.push_back({hf + ".weight", sl + ".weight", {out, in}});
    if (bias) n.push_back({hf + ".bias", sl + ".bias", {out}});
  };
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".",
                      b = "blocks." + std::to_string(i) + ".";
    n.push_back({h + "input_layernorm.weight", b + "ln1.weight", {D}});
    linear(h + "self_attn.q_proj", b + "mixer.q", D, D, c.mixer.qkv_bias);
    linear(h + "self_attn.k_proj", b + "mixer.k", KV, D, c.mixer.qkv_bias);
    linear(h + "self_attn.v_proj", b + "mixer.v", KV, D, c.mixer.qkv_bias);
    linear(h + "self_attn.o_proj", b + "mixer.o", D, D, c.mixer.o_bias);
    n.push_back({h + "post_attention_layernorm.weight", b + "ln2.weight", {D}});
    linear(h + "mlp.gate_proj", b + "mlp.gate", I, D, c.mlp_bias);
    linear(h + "mlp.up_proj", b + "mlp.up", I, D, c.mlp_bias);
    linear(h + "mlp.down_proj", b + "mlp.down", D, I, c.mlp_bias);
  }
  return n;
}

// Mistral's sliding window: attention over the last W positions only. Up to W tokens that is full
// attention, which seqlab computes; so the context stops at W.
int64_t mistral_context(const nlohmann::json& hf, int64_t P, const std::string& source,
                        std::vector<std::string>* notes) {
  if (!hf_find(hf, "sliding_window")) return P;
  const int64_t W = hf_positive_int(hf, "sliding_window", source);
  if (W >= P) return P;
  if (notes)
    notes->push_back(fmt::format(
        "{}: sliding_window {} < max_position_embeddings {}: max_context = {}, where full "
        "attention equals Mistral's sliding-window attention",
        source, W, P, W));
  return W;
}

}  // namespace

ModelConfig llama_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                 std::vector<std::string>* notes) {
  const std::string type = hf_string_or(hf, "model_type", "", source);
  hf_check_architectures(hf, {architecture_of(type)}, source);

  ModelConfig c = hf_rope_config(hf, source);
  const int64_t D = c.mixer.d_model, H = c.mixer.n_head, P = c.mixer.max_len;
  const int64_t G =
      hf_find(hf, "num_key_value_heads") ? hf_positive_int(hf, "num_key_value_heads", source) : H;
  SEQLAB_CHECK(H % G == 0, "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
               source, H, G);
  if (hf_find(hf, "head_dim"))
    SEQLAB_CHECK(hf_positive_int(hf, "head_dim", source) == D / H,
                 "{}: head_dim {} differs from hidden_size / num_attention_heads = {}; seqlab's "
                 "heads split d_model",
                 source, hf["head_dim"].get<int64_t>(), D / H);
  const std::string act = hf_string_or(hf, "hidden_act", "silu", source);
  SEQLAB_CHECK(act == "silu" || act == "swish",
               "{}: hidden_act '{}' is not supported (seqlab's SwiGLU uses silu)", source, act);
  hf_check_rope_scaling(hf, source);
  SEQLAB_CHECK(hf_number_or(hf, "partial_rotary_factor", 1.0, source) == 1.0,
               "{}: partial_rotary_factor must be 1 for {} (every head dim rotates)", source, type);

  c.mixer.n_kv_head = G == H ? 0 : G;
  c.mixer.rope_theta = hf_number_or(hf, "rope_theta", 10000.0, source);
  c.mixer.rope_fraction = 1.0;
  c.mlp = "swiglu";
  c.norm = "rms";
  c.norm_eps = hf_number_or(hf, "rms_norm_eps", 1e-6, source);
  if (type == "qwen2") {
    SEQLAB_CHECK(!hf_bool_or(hf, "use_sliding_window", false, source),
                 "{}: use_sliding_window is true; seqlab's attention is full (use_sliding_window "
                 "must be false)",
                 source);
    c.mixer.qkv_bias = true;
    c.mixer.o_bias = false;
    c.mlp_bias = false;
  } else if (type == "mistral") {
    c.mixer.qkv_bias = c.mixer.o_bias = c.mlp_bias = false;
    c.mixer.max_len = mistral_context(hf, P, source, notes);
  } else {
    c.mixer.qkv_bias = c.mixer.o_bias = hf_bool_or(hf, "attention_bias", false, source);
    c.mlp_bias = hf_bool_or(hf, "mlp_bias", false, source);
  }
  hf_validate(c, source);
  return c;
}

TensorMap llama_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                                const std::string& source) {
  auto t = hf_float_tensors(hf, hf_is_rotary_buffer, source);
  if (cfg.tie_embeddings)
    hf_take_tied_head(t, "lm_head.weight", "model.embed_tokens.weight", source);
  TensorMap out;
  hf_rename_in(t, llama_names(cfg), {}, out, source);
  return out;
}

void check_llama_expressible(const SeqModelImpl& model, const std::string& source) {
  const auto& c = model.config();
  SEQLAB_CHECK(c.mixer.rope && c.norm == "rms" && c.mlp == "swiglu",
               "{}: Llama needs RoPE, RMSNorm and a SwiGLU MLP", source);
  SEQLAB_CHECK(!model.uses_learned_positions() && c.resolved_pos(true) == "none",
               "{}: Llama's positions are rotary only; this model also adds '{}' positions", source,
               c.resolved_pos(true));
  SEQLAB_CHECK(c.mixer.rope_dims() == c.mixer.d_head(),
               "{}: Llama rotates every head dim; this model rotates {} of {} (rope_fraction {})",
               source, c.mixer.rope_dims(), c.mixer.d_head(), c.mixer.rope_fraction);
  SEQLAB_CHECK(!c.parallel_residual,
               "{}: Llama blocks are sequential; this model has a parallel residual (GPT-NeoX's)",
               source);
  const bool llama = c.mixer.qkv_bias == c.mixer.o_bias,
             qwen2 = c.mixer.qkv_bias && !c.mixer.o_bias && !c.mlp_bias;
  SEQLAB_CHECK(llama || qwen2,
               "{}: attention biases q/k/v {} and o {} (MLP {}) fit no family: Llama has them on "
               "q, k, v and o or on none (attention_bias), Qwen2 on q, k and v only and none in "
               "the MLP",
               source, c.mixer.qkv_bias, c.mixer.o_bias, c.mlp_bias);
}

std::string llama_export_type(const ModelConfig& c) {
  return c.mixer.qkv_bias && !c.mixer.o_bias && !c.mlp_bias ? "qwen2" : "llama";
}

nlohmann::json hf_config_from_llama(const ModelConfig& cfg) {
  const std::string type = llama_export_type(cfg);
  nlohmann::json j = {
      {"architectures", {architecture_of(type)}},
      {"model_type", type},
      {"vocab_size", cfg.vocab_size},
      {"hidden_size", cfg.mixer.d_model},
      {"intermediate_size", cfg.mlp_width()},
      {"num_hidden_layers", cfg.n_layer},
      {"num_attention_heads", cfg.mixer.n_head},
      {"num_key_value_heads", cfg.mixer.kv_heads()},
      {"hidden_act", "silu"},
      {"max_position_embeddings", cfg.mixer.max_len},
      {"initializer_range", 0.02},
      {"rms_norm_eps", cfg.norm_eps},
      {"use_cache", true},
      {"tie_word_embeddings", cfg.tie_embeddings},
      {"rope_theta", cfg.mixer.rope_theta},
      {"rope_scaling", nullptr},
      {"attention_dropout", 0.0},
      {"torch_dtype", "float32"},
  };
  if (type == "qwen2") {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = cfg.n_layer;
  } else {
    j["head_dim"] = cfg.mixer.d_head();
    j["attention_bias"] = cfg.mixer.qkv_bias;
    j["mlp_bias"] = cfg.mlp_bias;
    j["pretraining_tp"] = 1;
  }
  return j;
}

TensorMap hf_tensors_from_llama(SeqModelImpl& model) {
  torch::NoGradGuard ng;
  return hf_rename_out(model_tensors(model), llama_names(model.config()));
}

}  // namespace seqlab
