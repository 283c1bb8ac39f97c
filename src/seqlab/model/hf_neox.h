// Hugging Face GPT-NeoX (GPTNeoXForCausalLM; EleutherAI's Pythia and GPT-NeoX-20B). model/
// hf_import.h has what every family shares.
//
// A seqlab model with softmax attention, rotary positions on the first R = int(Dh * rotary_pct)
// dims of each head (base rotary_emb_base, rotate-half), LayerNorm (layer_norm_eps), a plain MLP
// of width intermediate_size with biases (hidden_act gelu -> exact gelu; gelu_new or
// gelu_pytorch_tanh -> gelu_tanh), parallel residual x + attn(ln1 x) + mlp(ln2 x) when
// use_parallel_residual (the default), and an untied head (embed_out) unless
// tie_word_embeddings. D = hidden_size, H heads of Dh = D/H, I = intermediate_size:
//
//   HF                                                        seqlab
//   gpt_neox.embed_in.weight [V,D]                            wte.weight
//   gpt_neox.layers.{i}.input_layernorm.{weight,bias}         blocks.{i}.ln1.*
//   gpt_neox.layers.{i}.attention.query_key_value.weight      blocks.{i}.mixer.{q,k,v}.weight:
//     [3D,D], viewed [H,3,Dh,D]                                 [:,0], [:,1], [:,2] -> [D,D]
//   gpt_neox.layers.{i}.attention.query_key_value.bias [3D]   blocks.{i}.mixer.{q,k,v}.bias
//     viewed [H,3,Dh]                                           likewise
//   gpt_neox.layers.{i}.attention.dense.{weight,bias}         blocks.{i}.mixer.o.*
//   gpt_neox.layers.{i}.post_attention_layernorm.*            blocks.{i}.ln2.*
//   gpt_neox.layers.{i}.mlp.dense_h_to_4h.{weight,bias}       blocks.{i}.mlp.fc1.*
//   gpt_neox.layers.{i}.mlp.dense_4h_to_h.{weight,bias}       blocks.{i}.mlp.fc2.*
//   gpt_neox.final_layer_norm.{weight,bias}                   ln_f.*
//   embed_out.weight [V,D] (untied)                           head.weight
//
// The packed projection interleaves per head (head h's q, k, v rows are contiguous), hence the
// [H,3,Dh,D] view. attention_bias (default true) gives the q/k/v and dense biases. Dropped
// buffers: attention.bias (causal mask), attention.masked_bias, *.rotary_emb.inv_freq. Refused: a
// non-null rope_scaling, another hidden_act, a rotary_pct whose rotary dims are odd (transformers
// cannot run it either), rotary_emb_base and rope_theta (or rotary_pct and partial_rotary_factor)
// that disagree.
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace seqlab {

// config.json (model_type gpt_neox) -> ModelConfig. `notes` is unused (the hf_import signature).
ModelConfig neox_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                std::vector<std::string>* notes);
// The checkpoint's tensors (as stored) -> seqlab tensors, fp32.
TensorMap neox_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                               const std::string& source);

// Throws seqlab::Error naming `source` unless GPT-NeoX can express the model (RoPE over an even
// int(Dh * rope_fraction) dims, LayerNorm, a plain MLP with biases, no learned positions, as many
// kv heads as heads, q/k/v and o biases both or neither).
void check_neox_expressible(const SeqModelImpl& model, const std::string& source);
// The config.json transformers writes for the model.
nlohmann::json hf_config_from_neox(const ModelConfig& cfg);
// The model's tensors under HF names, contiguous fp32.
TensorMap hf_tensors_from_neox(SeqModelImpl& model);

}  // namespace seqlab
