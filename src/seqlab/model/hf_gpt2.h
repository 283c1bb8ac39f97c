// Hugging Face GPT-2 interop: the GPT2LMHeadModel family of `seqlab import-hf` / `export-hf`
// (model/hf_import.h reads and writes the directories and dispatches on model_type).
//
// GPT-2 (Radford et al. 2019) is exactly a seqlab model with softmax attention, learned positions,
// pre-norm blocks with LayerNorm (eps layer_norm_epsilon), an MLP of width n_inner with the
// tanh-approximated GELU ("gelu_new"), a final LayerNorm and an lm head tied to the token
// embedding. Only the parameter layout differs
// (D = n_embd, I = n_inner, V = vocab_size, P = n_positions):
//
//   HF GPT-2                                  seqlab
//   wte.weight [V,D], wpe.weight [P,D]        wte.weight, wpe.weight
//   h.{i}.ln_1.{weight,bias} [D]              blocks.{i}.ln1.{weight,bias}
//   h.{i}.attn.c_attn.weight [D,3D]           blocks.{i}.mixer.{q,k,v}.weight [D,D] each:
//                                             column block 0, 1, 2 of c_attn, transposed
//   h.{i}.attn.c_attn.bias [3D]               blocks.{i}.mixer.{q,k,v}.bias: thirds of it
//   h.{i}.attn.c_proj.{weight [D,D],bias}     blocks.{i}.mixer.o (weight transposed)
//   h.{i}.ln_2.{weight,bias}                  blocks.{i}.ln2.{weight,bias}
//   h.{i}.mlp.c_fc.{weight [D,I],bias [I]}    blocks.{i}.mlp.fc1 (weight transposed: [I,D])
//   h.{i}.mlp.c_proj.{weight [I,D],bias [D]}  blocks.{i}.mlp.fc2 (weight transposed: [D,I])
//   ln_f.{weight,bias}                        ln_f.{weight,bias}
//
// HF's Conv1D computes y = x W + b with W [in,out], the transpose of nn.Linear's [out,in]; that is
// the only reason for the transposes. q, k and v split D into heads the same way in both
// (head h = channels h*Dh .. (h+1)*Dh), so no per-head permutation is needed.
//
// On reading, every name may carry the prefix "transformer." (what GPT2LMHeadModel writes);
// "lm_head.weight" may be present and must equal wte.weight (tied); the buffers h.{i}.attn.bias and
// h.{i}.attn.masked_bias (the causal mask) are ignored. Any other extra, missing or misshaped
// tensor is an error naming it. F16/BF16/F64 weights are converted to F32 (hf_float_tensors).
//
// On writing, names carry the "transformer." prefix, lm_head.weight and the mask buffers are left
// out (transformers ties and rebuilds them), and the file's metadata says {"format": "pt"}, which
// transformers requires.
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

inline constexpr int64_t kGpt2VocabSize = 50257;  // GPT-2's byte-level BPE vocabulary

// The seqlab ModelConfig of an HF GPT-2 config.json object: softmax attention, causal, learned
// positions (max_context = n_positions), tied lm head, norm_eps = layer_norm_epsilon, MLP width
// n_inner (mlp_ratio when n_embd divides it, else d_mlp), activation from activation_function
// (gelu_new / gelu_pytorch_tanh -> gelu_tanh, gelu -> gelu). Throws seqlab::Error naming `source`
// and the key for anything seqlab cannot reproduce exactly: another model_type, untied
// embeddings, unscaled or layer-scaled attention, cross-attention, another activation, an
// architecture other than GPT2LMHeadModel / GPT2Model.
ModelConfig gpt2_config_from_hf(const nlohmann::json& hf, const std::string& source);

// The HF config.json object of a model GPT-2 can express (check_gpt2_expressible first).
nlohmann::json hf_config_from_gpt2(const ModelConfig& cfg);

// Throws seqlab::Error naming `source` unless the model is a GPT-2: softmax attention, causal, a
// plain MLP with biases, learned positions and no RoPE, LayerNorm, biases on q/k/v/o, as many kv
// heads as heads, sequential blocks, an lm head tied to wte. `model` gives the resolved positions.
void check_gpt2_expressible(const SeqModelImpl& model, const std::string& source);

// HF GPT-2 tensors (names as in a file, prefix and buffers allowed) -> seqlab tensors of a model
// with config `cfg` (names as model_tensors() gives them), F32. Throws seqlab::Error naming
// `source` on missing, extra or misshaped tensors, or an lm_head.weight that differs from
// wte.weight.
TensorMap gpt2_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                               const std::string& source);

// The inverse: a GPT-2-expressible model's tensors in HF names (with the "transformer." prefix),
// contiguous F32 copies.
TensorMap hf_tensors_from_gpt2(SeqModelImpl& model);

}  // namespace seqlab
