// A model directory: config.json + model.safetensors (docs/DESIGN.md, "Data and file formats").
//
// config.json:
//   {"format": "seqlab-model", "format_version": 1, "seqlab_version": "0.1.0",
//    "model": {ModelConfig fields}, "task": {...}, "train": {...}}
// "task" and "train" are optional sections that the layers above own; the model layer carries
// them through untouched. Unknown top-level keys and unknown model fields are rejected.
// model.safetensors holds every parameter and buffer of SeqModel by its stable name; the reader
// rejects a missing or extra tensor, or a shape that does not match the config.
//
// Writes are atomic (temp file, fsync, rename): a killed process never leaves a half-written file.
#pragma once

#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

constexpr int kFormatVersion = 1;
inline const char* kConfigFile = "config.json";
inline const char* kWeightsFile = "model.safetensors";

struct LoadedModel {
  ModelConfig config;
  SeqModel model{nullptr};
  nlohmann::json sections;  // the optional "task" / "train" sections, as written
};

// Writes config.json (model config + sections) and model.safetensors into dir (created if needed).
void save_model_dir(const std::string& dir, SeqModelImpl& model,
                    const nlohmann::json& sections = nlohmann::json::object());

// Reads config.json only.
nlohmann::json read_config_json(const std::string& dir);

// Reads and checks config.json and model.safetensors; the model is on the CPU, in eval mode.
LoadedModel load_model_dir(const std::string& dir);

// Every parameter and buffer of a module by name (what model.safetensors holds).
std::map<std::string, torch::Tensor> model_tensors(torch::nn::Module& m);

// Copies tensors into a module's parameters and buffers; the set must match exactly.
void load_model_tensors(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& t,
                        const std::string& source);

}  // namespace seqlab
