// Model directories whose weights are stored as bf16 or int8 (issue 35; `seqlab quantize`,
// docs/DESIGN.md "Data and file formats").
//
// config.json records the format at the top level, beside "model" (never inside it: the model
// config describes the architecture, and the fast decoder refuses unknown model fields):
//
//   "weights": {"format": "bf16"}   or   "weights": {"format": "int8", "block": 32}
//
// The format applies to the model's matrices (is_stored_matrix: every 2-D floating-point tensor
// named *.weight: the mixers' and MLPs' projections, the token embedding, an untied head, a
// learned position table). model.safetensors then holds, for a matrix `<name>` of shape
// [out, in]:
//
//   bf16   <name>              BF16 [out, in]      (core/quant.h float_to_bf16: nearest, ties even)
//   int8   <name>              I8   [out, in]      q, in [-127, 127]
//          <name>_scale        F32  [out, ceil(in / 32)]   one scale per block of 32 inputs
//                              (core/quant.h quantize_q8: w ~= q * scale, ggml's Q8_0 layout)
//
// Every other tensor (norm gains, biases, gates, 1-D or 3-D parameters, buffers) is stored as in
// an f32 directory, floating-point ones as F32. A directory without "weights" is f32, and its
// floating-point tensors may be F32, F16, BF16 or F64 as before (`seqlab pack`).
//
// The reader (decode_weights) is strict and answers a malformed file with a one-line seqlab::Error
// naming the file and the tensor: a matrix of another dtype than declared, a missing scale, a scale
// of another dtype or shape, a `_scale` tensor with no int8 matrix beside it, a negative, NaN,
// infinite or overflowing scale (127 * scale must be finite), a missing, extra or misshapen tensor,
// a block other than 32, an unknown field of the section. A stored directory cannot hold unmerged
// adapters. The decoded weights are fp32 (dequantize_q8, bf16_to_float), so every consumer of
// load_model_dir (eval, finetune, convert, the torch engine, the fast decoder) runs on them.
#pragma once

#include "seqlab/core/quant.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

inline const char* kWeightsSection = "weights";  // the key in config.json
inline const char* kScaleSuffix = "_scale";      // <matrix>_scale: its int8 block scales

// Whether a stored format applies to the model tensor `name`: 2-D, floating-point, *.weight.
bool is_stored_matrix(const std::string& name, const torch::Tensor& t);

// config.json's "weights" section -> its format; `path` is named in errors.
WeightFormat parse_weights_section(const nlohmann::json& section, const std::string& path);
// The section a directory of format f records ({"format": "int8", "block": 32}).
nlohmann::json weights_section(WeightFormat f);

struct EncodeStats {
  int64_t matrices = 0;        // tensors stored in the format
  double max_abs_error = 0.0;  // max |w - decoded w| over them
};

// The model's tensors (fp32, by name) -> the tensors model.safetensors holds in format f.
// Throws for a non-finite matrix weight in int8 (it has no int8 value).
TensorMap encode_weights(const TensorMap& model, WeightFormat f, EncodeStats* stats = nullptr);

// model.safetensors' tensors -> fp32 tensors by the model's names, ready for load_model_tensors.
// `model`: the model's own tensors (only their names, shapes and dtypes are read); f: the declared
// format (bf16 or int8; f32 is load_model_tensors' job); `file`: named in errors.
TensorMap decode_weights(const TensorMap& stored, const TensorMap& model, WeightFormat f,
                         const std::string& file);

// Writes a model directory storing the model's matrices in format f (bf16 or int8): weights first,
// config.json (with `sections` and "weights") last, both atomically. Refuses a model with
// unmerged adapters.
void save_stored_model_dir(const std::string& dir, SeqModelImpl& model,
                           const nlohmann::json& sections, WeightFormat f,
                           EncodeStats* stats = nullptr);

}  // namespace seqlab
