// A model directory: config.json + model.safetensors (docs/DESIGN.md, "Data and file formats").
//
// config.json:
//   {"format": "seqlab-model", "format_version": 1, "seqlab_version": "0.1.0",
//    "model": {ModelConfig fields}, "task": {...}, "train": {...}}
// The optional sections (kSections below) belong to the layers above; the model layer carries
// them through untouched, except "adapters", which always describes the saved model. A top-level
// "weights" section ({"format": "bf16"|"int8", ...}) marks a directory written by `seqlab
// quantize` (model/quantized_dir.h); it is not carried: a directory saved from a loaded model
// stores fp32 unless it says otherwise. Unknown top-level keys and unknown model fields are
// rejected. model.safetensors holds every parameter and buffer of SeqModel by its stable name; the
// reader rejects a missing or extra tensor, or a shape that does not match the config.
//
// Writes are atomic (temp file, fsync, rename): a killed process never leaves a half-written file.
#pragma once

#include "seqlab/core/quant.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

constexpr int kFormatVersion = 1;
// The optional sections of config.json, owned by the layers that write them:
//   task, train   the trainer (train/)                 convert   seqlab convert (convert/)
//   finetune      seqlab finetune (what it started from, its adapter config)
//   adapters      unmerged adapters: model.safetensors holds adapters.* beside the base weights,
//                 and load_model_dir attaches them (model/adapters.h)
//   hf            what import-hf read (model/hf_import.h)
//   encoder       a sentence encoder: tokenizer, pooling, max_tokens (methods/encoder.h)
inline constexpr const char* kSections[] = {"task",     "train", "convert", "finetune",
                                            "adapters", "hf",    "encoder"};
inline const char* kConfigFile = "config.json";
inline const char* kWeightsFile = "model.safetensors";

struct LoadedModel {
  ModelConfig config;
  SeqModel model{nullptr};
  nlohmann::json sections;  // the optional sections (kSections), as written
  // How model.safetensors stores the weights (config.json "weights"; f32 when absent). The model
  // itself is always fp32: a stored bf16 or int8 directory is dequantized at load.
  WeightFormat weights = WeightFormat::f32;
};

// Writes config.json (model config + sections) and model.safetensors into dir (created if needed).
// weights_dtype: how floating-point tensors are stored (F32, or BF16 / F16 to halve the file;
// load_model_dir reads any of them into the model's fp32 parameters).
void save_model_dir(const std::string& dir, SeqModelImpl& model,
                    const nlohmann::json& sections = nlohmann::json::object(),
                    torch::ScalarType weights_dtype = torch::kFloat);

// The config.json save_model_dir writes: format, versions, "model", `sections`, and "adapters"
// when the model has them attached.
nlohmann::json model_dir_config(SeqModelImpl& model, const nlohmann::json& sections);

// Reads config.json only.
nlohmann::json read_config_json(const std::string& dir);
// What read_config_json does with the file's contents (any bytes): parses and checks the top
// level (format, format_version, known sections, a "model" section); `path` is named in errors.
nlohmann::json parse_config_json(std::string_view text, const std::string& path);

// Reads and checks config.json and model.safetensors; the model is on the CPU, in eval mode.
LoadedModel load_model_dir(const std::string& dir);

// Every parameter and buffer of a module by name (what model.safetensors holds).
std::map<std::string, torch::Tensor> model_tensors(torch::nn::Module& m);

// Copies tensors into a module's parameters and buffers; the set must match exactly.
void load_model_tensors(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& t,
                        const std::string& source);

}  // namespace seqlab
