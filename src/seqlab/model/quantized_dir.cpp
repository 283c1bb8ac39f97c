#include "seqlab/model/quantized_dir.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/model/model_dir.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

namespace seqlab {

namespace {

namespace fs = std::filesystem;

// A tensor name for a message: quoted, cut short (names in a hostile file may be anything).
std::string q(const std::string& name) {
  return json_for_message(nlohmann::json(name));
}

// The safetensors spelling of a dtype, as the file's header has it.
std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat:
      return "F32";
    case torch::kBFloat16:
      return "BF16";
    case torch::kInt8:
      return "I8";
    case torch::kHalf:
      return "F16";
    case torch::kDouble:
      return "F64";
    default:
      return c10::toString(t);
  }
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

torch::Tensor encode_matrix(const torch::Tensor& w, WeightFormat f, const std::string& name,
                            TensorMap& out, EncodeStats* stats) {
  const auto x = w.detach().to(torch::kFloat).contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  torch::Tensor decoded = torch::empty_like(x);
  if (f == WeightFormat::bf16) {
    auto h = torch::empty({rows, cols}, torch::kBFloat16);
    auto* hp = reinterpret_cast<uint16_t*>(h.data_ptr());
    const float* xp = x.data_ptr<float>();
    float* dp = decoded.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      hp[i] = float_to_bf16(xp[i]);
      dp[i] = bf16_to_float(hp[i]);
    }
    out[name] = h;
  } else {
    auto qt = torch::empty({rows, cols}, torch::kInt8);
    auto st = torch::empty({rows, q8_blocks(cols)}, torch::kFloat);
    try {
      quantize_q8(x.data_ptr<float>(), rows, cols, qt.data_ptr<int8_t>(), st.data_ptr<float>());
    } catch (const Error& e) {
      fail("tensor {}: {}", q(name), e.what());
    }
    dequantize_q8(qt.data_ptr<int8_t>(), st.data_ptr<float>(), rows, cols,
                  decoded.data_ptr<float>());
    out[name] = qt;
    out[name + kScaleSuffix] = st;
  }
  if (stats) {
    ++stats->matrices;
    if (x.numel() > 0)
      stats->max_abs_error =
          std::max(stats->max_abs_error, (x - decoded).abs().max().item<double>());
  }
  return decoded;
}

// The scale tensor of the int8 matrix `name` [rows, cols]: present, F32, [rows, q8_blocks(cols)].
void check_scale(const TensorMap& stored, const std::string& name, int64_t rows, int64_t cols,
                 const std::string& file) {
  const std::string scale_name = name + kScaleSuffix;
  auto it = stored.find(scale_name);
  SEQLAB_CHECK(it != stored.end(), "{}: int8 tensor {} has no scale tensor {}", file, q(name),
               q(scale_name));
  const auto& st = it->second;
  SEQLAB_CHECK(st.scalar_type() == torch::kFloat, "{}: scale tensor {} has dtype {}, expected F32",
               file, q(scale_name), dtype_name(st.scalar_type()));
  SEQLAB_CHECK(st.dim() == 2 && st.size(0) == rows && st.size(1) == q8_blocks(cols),
               "{}: scale tensor {} has shape {}, expected [{}, {}] (one scale per block of {} "
               "inputs)",
               file, q(scale_name), st.sizes(), rows, q8_blocks(cols), kQ8Block);
}

// The int8 matrix `name` [rows, cols] (checked, with check_scale) as fp32; its scales must be
// finite, >= 0 and small enough that 127 * scale is finite, so that every decoded weight is.
torch::Tensor decode_q8(const TensorMap& stored, const std::string& name, int64_t rows,
                        int64_t cols, const std::string& file) {
  const std::string scale_name = name + kScaleSuffix;
  const auto& st = stored.at(scale_name);
  const int64_t nb = q8_blocks(cols);
  const float* sp = st.data_ptr<float>();
  constexpr float kMaxScale = std::numeric_limits<float>::max() / 127.f;
  for (int64_t i = 0; i < st.numel(); ++i)
    SEQLAB_CHECK(std::isfinite(sp[i]) && sp[i] >= 0.f && sp[i] <= kMaxScale,
                 "{}: scale tensor {} holds {} at [{}, {}] (scales must be finite, >= 0 and <= "
                 "FLT_MAX / 127)",
                 file, q(scale_name), sp[i], i / nb, i % nb);
  auto w = torch::empty({rows, cols}, torch::kFloat);
  dequantize_q8(stored.at(name).data_ptr<int8_t>(), sp, rows, cols, w.data_ptr<float>());
  return w;
}

torch::Tensor decode_bf16(const torch::Tensor& h) {
  auto w = torch::empty(h.sizes(), torch::kFloat);
  const auto* hp = reinterpret_cast<const uint16_t*>(h.data_ptr());
  float* wp = w.data_ptr<float>();
  for (int64_t i = 0; i < h.numel(); ++i) wp[i] = bf16_to_float(hp[i]);
  return w;
}

}  // namespace

bool is_stored_matrix(const std::string& name, const torch::Tensor& t) {
  return t.dim() == 2 && t.is_floating_point() && ends_with(name, ".weight");
}

WeightFormat parse_weights_section(const nlohmann::json& s, const std::string& path) {
  SEQLAB_CHECK(s.is_object(), "{}: \"weights\" must be an object, got {}", path,
               json_for_message(s));
  for (auto it = s.begin(); it != s.end(); ++it)
    SEQLAB_CHECK(it.key() == "format" || it.key() == "block", "{}: unknown field 'weights.{}'",
                 path, json_for_message(nlohmann::json(it.key())));
  SEQLAB_CHECK(s.contains("format") && s["format"].is_string(),
               "{}: \"weights\" needs a string \"format\" (bf16 or int8)", path);
  const auto name = s["format"].get<std::string>();
  SEQLAB_CHECK(
      name == "bf16" || name == "int8",
      "{}: weights.format {} is not a stored format (bf16 or int8; an f32 directory has no "
      "\"weights\")",
      path, json_for_message(s["format"]));
  const WeightFormat f = parse_weight_format(name);
  if (f == WeightFormat::int8) {
    SEQLAB_CHECK(s.contains("block"), "{}: weights.format int8 needs \"block\": {}", path,
                 kQ8Block);
    SEQLAB_CHECK(s["block"].is_number_integer() && s["block"].get<int64_t>() == kQ8Block,
                 "{}: weights.block is {}; int8 is stored in blocks of {} only", path,
                 json_for_message(s["block"]), kQ8Block);
  } else {
    SEQLAB_CHECK(!s.contains("block"), "{}: weights.block belongs to int8, not {}", path, name);
  }
  return f;
}

nlohmann::json weights_section(WeightFormat f) {
  SEQLAB_CHECK(f != WeightFormat::f32, "weights_section: f32 is not a stored format");
  nlohmann::json j{{"format", weight_format_name(f)}};
  if (f == WeightFormat::int8) j["block"] = kQ8Block;
  return j;
}

TensorMap encode_weights(const TensorMap& model, WeightFormat f, EncodeStats* stats) {
  SEQLAB_CHECK(f != WeightFormat::f32, "encode_weights: f32 is not a stored format");
  TensorMap out;
  for (const auto& [name, t] : model) {
    if (is_stored_matrix(name, t))
      encode_matrix(t, f, name, out, stats);
    else
      out[name] = t.is_floating_point() ? t.detach().to(torch::kFloat) : t.detach();
  }
  return out;
}

TensorMap decode_weights(const TensorMap& stored, const TensorMap& model, WeightFormat f,
                         const std::string& file) {
  SEQLAB_CHECK(f != WeightFormat::f32, "decode_weights: f32 is not a stored format");
  const char* fname = weight_format_name(f);
  // A scale belongs to an int8 matrix of the model; any other *_scale is an orphan.
  for (const auto& [name, t] : stored) {
    if (!ends_with(name, kScaleSuffix) || model.count(name)) continue;
    const std::string base = name.substr(0, name.size() - std::strlen(kScaleSuffix));
    auto m = model.find(base);
    SEQLAB_CHECK(f == WeightFormat::int8 && m != model.end() && is_stored_matrix(base, m->second),
                 "{}: orphan scale tensor {}: the model has no int8 matrix {}", file, q(name),
                 q(base));
  }
  // The dtype each tensor must have, before the set and its shapes.
  ShapeList expected;
  for (const auto& [name, t] : model) {
    const bool matrix = is_stored_matrix(name, t);
    expected.emplace_back(name, t.sizes().vec());
    if (matrix && f == WeightFormat::int8)
      expected.emplace_back(name + kScaleSuffix,
                            std::vector<int64_t>{t.size(0), q8_blocks(t.size(1))});
    auto it = stored.find(name);
    if (it == stored.end()) continue;
    const auto want = !matrix ? (t.is_floating_point() ? torch::kFloat : t.scalar_type())
                      : f == WeightFormat::int8 ? torch::kInt8
                                                : torch::kBFloat16;
    SEQLAB_CHECK(it->second.scalar_type() == want, "{}: tensor {} has dtype {}, expected {} ({})",
                 file, q(name), dtype_name(it->second.scalar_type()), dtype_name(want),
                 matrix ? fmt::format("config.json declares weights {}", fname)
                        : "only matrices are stored in " + std::string(fname));
    if (matrix && f == WeightFormat::int8) check_scale(stored, name, t.size(0), t.size(1), file);
  }
  check_tensor_set(stored, expected, file);
  TensorMap out;
  for (const auto& [name, t] : model) {
    const auto& s = stored.at(name);
    if (!is_stored_matrix(name, t))
      out[name] = s;
    else if (f == WeightFormat::int8)
      out[name] = decode_q8(stored, name, t.size(0), t.size(1), file);
    else
      out[name] = decode_bf16(s);
  }
  return out;
}

void save_stored_model_dir(const std::string& dir, SeqModelImpl& model,
                           const nlohmann::json& sections, WeightFormat f, EncodeStats* stats) {
  SEQLAB_CHECK(!model.adapters,
               "a model with unmerged adapters cannot be stored as {}: merge them first",
               weight_format_name(f));
  auto j = model_dir_config(model, sections);
  j[kWeightsSection] = weights_section(f);
  auto tensors = encode_weights(model_tensors(model), f, stats);
  ensure_dir(dir);
  // Weights first, config last: a directory whose config.json exists has its weights too.
  save_safetensors((fs::path(dir) / kWeightsFile).string(), tensors,
                   {{"format", "pt"}, {"seqlab_version", SEQLAB_VERSION}});
  write_file_atomic((fs::path(dir) / kConfigFile).string(), j.dump(2) + "\n");
}

}  // namespace seqlab
