#include "seqlab/model/model_dir.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/quantized_dir.h"

#include <filesystem>

namespace seqlab {

namespace fs = std::filesystem;

std::map<std::string, torch::Tensor> model_tensors(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> t;
  for (const auto& p : m.named_parameters()) t[p.key()] = p.value();
  for (const auto& b : m.named_buffers()) t[b.key()] = b.value();
  return t;
}

void load_model_tensors(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& t,
                        const std::string& source) {
  ShapeList expected;
  auto own = model_tensors(m);
  for (const auto& [name, v] : own) expected.emplace_back(name, v.sizes().vec());
  check_tensor_set(t, expected, source);
  torch::NoGradGuard ng;
  for (auto& [name, v] : own) {
    const auto& src = t.at(name);
    SEQLAB_CHECK(src.is_floating_point() == v.is_floating_point(),
                 "{}: tensor '{}' has dtype {}, expected {}", source, name,
                 c10::toString(src.scalar_type()), c10::toString(v.scalar_type()));
    v.copy_(src);
  }
}

nlohmann::json model_dir_config(SeqModelImpl& model, const nlohmann::json& sections) {
  nlohmann::json j;
  j["format"] = "seqlab-model";
  j["format_version"] = kFormatVersion;
  j["seqlab_version"] = SEQLAB_VERSION;
  j["model"] = model.config().to_json();
  for (auto it = sections.begin(); it != sections.end(); ++it) j[it.key()] = it.value();
  // The "adapters" section always describes the model as it is saved.
  j.erase("adapters");
  if (model.adapters) j["adapters"] = model.adapters->config().to_json();
  return j;
}

void save_model_dir(const std::string& dir, SeqModelImpl& model, const nlohmann::json& sections,
                    torch::ScalarType weights_dtype) {
  ensure_dir(dir);
  const auto j = model_dir_config(model, sections);
  // Weights first, config last: a directory whose config.json exists has its weights too.
  auto tensors = model_tensors(model);
  if (weights_dtype != torch::kFloat)
    for (auto& [name, t] : tensors)
      if (t.is_floating_point()) t = t.detach().to(weights_dtype);
  save_safetensors((fs::path(dir) / kWeightsFile).string(), tensors,
                   {{"format", "pt"}, {"seqlab_version", SEQLAB_VERSION}});
  write_file_atomic((fs::path(dir) / kConfigFile).string(), j.dump(2) + "\n");
}

nlohmann::json read_config_json(const std::string& dir) {
  SEQLAB_CHECK(fs::is_directory(dir), "{}: not a directory (expected a model directory)", dir);
  const std::string path = (fs::path(dir) / kConfigFile).string();
  SEQLAB_CHECK(fs::exists(path), "{}: missing (not a model directory?)", path);
  return parse_config_json(read_file(path), path);
}

nlohmann::json parse_config_json(std::string_view text, const std::string& path) {
  nlohmann::json j;
  try {
    j = parse_json(text, path);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
  SEQLAB_CHECK(j.is_object(), "{}: expected a JSON object", path);
  SEQLAB_CHECK(j.contains("format") && j["format"].is_string() && j["format"] == "seqlab-model",
               "{}: not a seqlab model config (\"format\" is not \"seqlab-model\")", path);
  SEQLAB_CHECK(j.contains("format_version") && j["format_version"].is_number_integer(),
               "{}: missing integer format_version", path);
  // int64: get<int>() would read 2^32 + 1 as 1.
  const auto fv = j["format_version"].get<int64_t>();
  SEQLAB_CHECK(fv == kFormatVersion,
               "{}: format_version {} is not supported (this seqlab reads {})", path, fv,
               kFormatVersion);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& k = it.key();
    bool section = false;
    for (const char* name : kSections) section = section || k == name;
    SEQLAB_CHECK(k == "format" || k == "format_version" || k == "seqlab_version" || k == "model" ||
                     k == kWeightsSection || section,
                 "{}: unknown field '{}'", path, k);
  }
  SEQLAB_CHECK(j.contains("model"), "{}: missing \"model\" section", path);
  return j;
}

LoadedModel load_model_dir(const std::string& dir) {
  auto j = read_config_json(dir);
  const std::string cfg_path = (fs::path(dir) / kConfigFile).string();
  LoadedModel out;
  out.config = ModelConfig::from_json(j["model"], cfg_path);
  out.sections = nlohmann::json::object();
  for (const char* k : kSections)
    if (j.contains(k)) out.sections[k] = j[k];
  out.model = SeqModel(out.config);
  // Unmerged adapters are part of the model: their tensors sit beside the base weights.
  if (j.contains("adapters"))
    out.model->attach_adapters(AdapterConfig::from_json(j["adapters"], cfg_path));
  const std::string w = (fs::path(dir) / kWeightsFile).string();
  SEQLAB_CHECK(fs::exists(w), "{}: missing", w);
  auto file = load_safetensors(w);
  if (j.contains(kWeightsSection)) {
    // Stored bf16 / int8 (model/quantized_dir.h): checked, then decoded to fp32.
    out.weights = parse_weights_section(j[kWeightsSection], cfg_path);
    SEQLAB_CHECK(!j.contains("adapters"),
                 "{}: a directory storing weights {} cannot hold unmerged adapters", cfg_path,
                 weight_format_name(out.weights));
    file.tensors = decode_weights(file.tensors, model_tensors(*out.model), out.weights, w);
  }
  load_model_tensors(*out.model, file.tensors, w);
  out.model->eval();
  return out;
}

}  // namespace seqlab
