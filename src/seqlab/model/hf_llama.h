// Hugging Face Llama, Mistral and Qwen2 (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM):
// one tensor layout, so one mapping. model/hf_import.h has what every family shares.
//
// Each is a seqlab model with softmax attention, rotary positions (rope_theta, every head dim
// rotating, rotate-half), grouped-query attention (n_kv_head = num_key_value_heads), RMSNorm
// (rms_norm_eps), a SwiGLU MLP of width intermediate_size (hidden_act silu) and an lm head that is
// untied (lm_head.weight) or tied (tie_word_embeddings). D = hidden_size, H heads of Dh = D/H,
// G kv heads, I = intermediate_size, V = vocab_size:
//
//   HF                                                   seqlab
//   model.embed_tokens.weight [V,D]                      wte.weight
//   model.layers.{i}.input_layernorm.weight [D]          blocks.{i}.ln1.weight
//   model.layers.{i}.self_attn.q_proj.{weight,bias}      blocks.{i}.mixer.q.* [D,D] ([D])
//   model.layers.{i}.self_attn.{k,v}_proj.{weight,bias}  blocks.{i}.mixer.{k,v}.* [G*Dh,D]
//   model.layers.{i}.self_attn.o_proj.{weight,bias}      blocks.{i}.mixer.o.* [D,D]
//   model.layers.{i}.post_attention_layernorm.weight     blocks.{i}.ln2.weight
//   model.layers.{i}.mlp.{gate,up}_proj.{weight,bias}    blocks.{i}.mlp.{gate,up}.* [I,D]
//   model.layers.{i}.mlp.down_proj.{weight,bias}         blocks.{i}.mlp.down.* [D,I]
//   model.norm.weight                                    ln_f.weight
//   lm_head.weight [V,D] (untied)                        head.weight
//
// Both are nn.Linear [out,in] and split heads the same way, so every tensor is a rename. Biases:
// Llama's attention_bias puts them on q, k, v and o, its mlp_bias on the MLP; Qwen2 always has
// them on q, k, v and never on o or the MLP; Mistral has none.
//
// Refused on import (each an error naming the field and config.json): a non-null rope_scaling, a
// hidden_act other than silu, a head_dim other than D/H, a partial_rotary_factor other than 1,
// Qwen2's use_sliding_window. Mistral's sliding_window W < max_position_embeddings gives
// max_context = W (full attention equals sliding-window attention up to W tokens), with a note.
// Dropped buffers: *.rotary_emb.inv_freq. A tied checkpoint may hold lm_head.weight equal to
// model.embed_tokens.weight.
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace seqlab {

// config.json (model_type llama | mistral | qwen2) -> ModelConfig; notes for the import log.
ModelConfig llama_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                 std::vector<std::string>* notes);
// The checkpoint's tensors (as stored) -> seqlab tensors, fp32.
TensorMap llama_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                                const std::string& source);

// Throws seqlab::Error naming `source` unless Llama or Qwen2 can express the model (RoPE over all
// of each head, RMSNorm, SwiGLU, no learned positions, sequential residual, biases as one of the
// two families has them). hf_export_type calls it for a RoPE + RMSNorm + SwiGLU model.
void check_llama_expressible(const SeqModelImpl& model, const std::string& source);
// "qwen2" when q/k/v have biases and o and the MLP none, else "llama".
std::string llama_export_type(const ModelConfig& cfg);
// The config.json transformers writes for the model (llama or qwen2, as llama_export_type says).
nlohmann::json hf_config_from_llama(const ModelConfig& cfg);
// The model's tensors under HF names, contiguous fp32.
TensorMap hf_tensors_from_llama(SeqModelImpl& model);

}  // namespace seqlab
