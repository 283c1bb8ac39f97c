// Hugging Face interop, the part every family shares: `seqlab import-hf` / `export-hf` dispatch on
// config.json's model_type, read (sharded) safetensors checkpoints, refuse what cannot be
// reproduced exactly, and write new directories atomically. docs/hf_import.md is the user's guide.
//
// Families (one file each; the tensor mappings are in their headers):
//
//   model_type                 file             seqlab model
//   gpt2                       model/hf_gpt2.h  learned positions, LayerNorm, plain MLP, tied head
//   llama | mistral | qwen2    model/hf_llama.h RoPE, RMSNorm, SwiGLU, grouped-query attention
//   gpt_neox                   model/hf_neox.h  partial RoPE, LayerNorm, plain MLP, parallel
//                                               residual (Pythia)
//
// Import (read_hf): config.json is parsed and checked first (unsupported model_type, any
// quantization_config, a non-null rope_scaling, ... are errors naming the field and the file);
// then the weights: model.safetensors, or the shards model.safetensors.index.json names (a shard
// it names that does not exist is an error naming both). Hub buffers (causal masks, rotary
// inv_freq) are recognised by name and dropped; quantized tensors (GPTQ/AWQ qweight, qzeros,
// scales, g_idx; bitsandbytes absmax/quant_map/SCB) and integer dtypes are refused by name;
// F32/F16/BF16/F64 become fp32. Any other missing, extra or misshaped tensor is an error naming it.
// A tokenizer.json beside the checkpoint is copied (with tokenizer_config.json) into the model
// directory, whose task section then says {"task": "lm", "tokenizer": "hf"}.
//
// Export (write_hf) picks the family from the model's config: RoPE + RMSNorm + SwiGLU -> llama
// (qwen2 when q/k/v have biases and o has none), RoPE + LayerNorm + plain MLP -> gpt_neox,
// learned positions + LayerNorm + plain MLP -> gpt2; anything else (recurrent or linear-attention
// mixers, bidirectional attention, other heads, learned positions with RMSNorm, ...) is refused
// with the reason. It writes config.json (architectures, model_type, torch_dtype "float32" and
// every field the family's config class reads) and model.safetensors (F32, metadata
// {"format": "pt"}) as transformers' save_pretrained would, and copies the tokenizer files back.
// An fp32 import -> export -> import round trip is bitwise.
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

inline const char* kHfIndexFile = "model.safetensors.index.json";
inline const char* kHfTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json"};

// ---- config.json values ------------------------------------------------------------------------
// HF writes null for "use the default", so a null value counts as absent. Errors name `source`
// and the key, and quote the value bounded (json_for_message).

const nlohmann::json* hf_find(const nlohmann::json& hf, const char* key);
int64_t hf_positive_int(const nlohmann::json& hf, const char* key, const std::string& source);
bool hf_bool_or(const nlohmann::json& hf, const char* key, bool def, const std::string& source);
double hf_number_or(const nlohmann::json& hf, const char* key, double def,
                    const std::string& source);
std::string hf_string_or(const nlohmann::json& hf, const char* key, const std::string& def,
                         const std::string& source);
// Every entry of "architectures" (when present) must be one of `allowed`.
void hf_check_architectures(const nlohmann::json& hf, const std::vector<std::string>& allowed,
                            const std::string& source);
// rope_scaling must be absent, null, or of type "default" (seqlab's RoPE is unscaled).
void hf_check_rope_scaling(const nlohmann::json& hf, const std::string& source);
// The MLP width I as a ModelConfig holds it: mlp_ratio = I / D when D divides I, else d_mlp = I.
void hf_set_mlp_width(ModelConfig& c, int64_t width);
// What Llama-style and GPT-NeoX configs share, under the same keys: a causal softmax-attention
// lm with RoPE and no learned positions; d_model = hidden_size (divisible by n_head =
// num_attention_heads), n_layer = num_hidden_layers, vocab_size, max_len =
// max_position_embeddings, MLP width intermediate_size, tie_word_embeddings (default false). The
// family sets the rest (norm, mlp, biases, rope_theta / rope_fraction, kv heads).
ModelConfig hf_rope_config(const nlohmann::json& hf, const std::string& source);
// c.validate(), its errors prefixed with `source`.
void hf_validate(ModelConfig& c, const std::string& source);

// ---- files -------------------------------------------------------------------------------------

// config.json's text -> its object. Checks that it is a JSON object with a supported model_type
// and no quantization_config; `path` is named in errors.
nlohmann::json parse_hf_config(std::string_view text, const std::string& path);
// The model types import-hf reads, in the order messages list them.
const std::vector<std::string>& hf_model_types();

// model.safetensors.index.json's text -> its weight_map (tensor name -> shard file name). Shard
// names must be plain file names in the same directory.
std::map<std::string, std::string> parse_hf_shard_index(std::string_view text,
                                                        const std::string& path);

struct HfWeights {
  TensorMap tensors;   // as stored (any dtype)
  std::string source;  // the file errors name: model.safetensors or the index
};
// model.safetensors, or every shard model.safetensors.index.json names. A missing shard, a tensor
// the index places in a shard that lacks it, or one in two shards is an error.
HfWeights read_hf_weights(const std::string& hf_dir);

// The float tensors of a checkpoint, ready to rename: drops the tensors `is_buffer` names (hub
// buffers: masks, inv_freq), refuses quantized tensors and non-float dtypes by name, converts the
// rest to fp32.
TensorMap hf_float_tensors(const TensorMap& hf,
                           const std::function<bool(const std::string&)>& is_buffer,
                           const std::string& source);
// name ends with "rotary_emb.inv_freq" (per layer in older transformers, per model in newer).
bool hf_is_rotary_buffer(const std::string& name);
// A tied model's checkpoint may still hold its head: removes `head` from t after checking that it
// equals `embed`.
void hf_take_tied_head(TensorMap& t, const std::string& head, const std::string& embed,
                       const std::string& source);

// (HF name, seqlab name, shape): the renames of a family whose tensors map one to one.
struct HfName {
  std::string hf, seqlab;
  std::vector<int64_t> shape;
};
// Checks that t holds exactly `names` (plus `more`, other expected HF tensors the caller maps
// itself) with their shapes, then moves the renamed ones into `out`.
void hf_rename_in(const TensorMap& t, const std::vector<HfName>& names, const ShapeList& more,
                  TensorMap& out, const std::string& source);
// The inverse: the model's tensors under HF names, contiguous fp32 copies.
TensorMap hf_rename_out(const TensorMap& model_tensors, const std::vector<HfName>& names);

// ---- dispatch ----------------------------------------------------------------------------------

// The seqlab ModelConfig of an HF config.json object (any supported model_type). Notes the import
// should log (e.g. Mistral's sliding window) are appended to `notes` when not null.
ModelConfig model_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                 std::vector<std::string>* notes = nullptr);
// The family's display name ("Llama", "GPT-NeoX", ...) of a model_type.
std::string hf_family_name(const std::string& model_type);

// The model_type export-hf writes for `model` (gpt2 | llama | qwen2 | gpt_neox), or a
// seqlab::Error naming `source` with the reason no family can express it.
std::string hf_export_type(const SeqModelImpl& model, const std::string& source);

// Reads an HF directory into a seqlab model on the CPU, in eval mode. `sections` holds "hf"
// ({"from": absolute dir, "config": config.json as read}) and, with a tokenizer.json or GPT-2's
// vocabulary, "task". `notes` (if not null) receives the import's notes. max_context > 0 caps
// the context (the KV cache is allocated for all of it: Llama 3.1 8B's 131072 positions take
// 32 GiB per sequence in fp32); exact for the RoPE families, refused for GPT-2's learned positions
// unless it is at least n_positions.
LoadedModel read_hf(const std::string& hf_dir, std::vector<std::string>* notes = nullptr,
                    int64_t max_context = 0);
// Writes `model` as an HF directory of `model_type` (hf_export_type's answer); `extra` keys are
// added to config.json (export_hf: the token ids of the config the model was imported from).
void write_hf(const std::string& out_dir, SeqModelImpl& model, const std::string& model_type,
              const nlohmann::json& extra = nlohmann::json::object());

struct HfConversion {
  LoadedModel model;
  std::string model_type;  // what was read (import) or written (export)
};
// `seqlab import-hf`: read_hf, logs the notes (stderr), then a seqlab model directory at out_dir
// plus the tokenizer files. `seqlab export-hf`: load_model_dir (adapters merged), then write_hf
// plus the model directory's tokenizer files; a model imported from HF keeps its
// bos/eos/pad_token_id (from the "hf" section). Both validate everything before writing, refuse an
// out_dir that exists and is not an empty directory, and write into a sibling
// "<out>.tmp-<pid>" renamed to out_dir at the end.
HfConversion import_hf(const std::string& hf_dir, const std::string& out_dir,
                       int64_t max_context = 0);
HfConversion export_hf(const std::string& model_dir, const std::string& out_dir);

// The atomic new-directory write the commands share: refuses an existing non-empty out_dir, then
// write(staging dir) and a rename.
void check_new_output_dir(const std::string& out_dir);
void write_new_dir(const std::string& out_dir,
                   const std::function<void(const std::string&)>& write);
// Copies the tokenizer files (kHfTokenizerFiles) that exist in from_dir into to_dir; returns
// whether tokenizer.json was among them.
bool copy_hf_tokenizer(const std::string& from_dir, const std::string& to_dir);

}  // namespace seqlab
