// Stored bf16 / int8 model directories (model/quantized_dir.h, issue 35 §1): the encoding round
// trip, the directory round trip through load_model_dir, and the strict reader's refusal of every
// malformed variant, each with a message naming the tensor or the field.
#include "seqlab/model/model_dir.h"
#include "seqlab/model/quantized_dir.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"

#include "mixer_testing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

// A model's tensors: a matrix with a tail block (40 = 32 + 8 inputs), a bias, a 3-D parameter and
// an integer buffer.
TensorMap model_like() {
  torch::manual_seed(3);
  return {{"l.weight", torch::randn({3, 40})},
          {"l.bias", torch::randn({3})},
          {"conv.weight", torch::randn({2, 1, 4})},
          {"steps", torch::tensor({5, 6}, torch::kInt64)}};
}

std::string decode_error(const TensorMap& stored, WeightFormat f) {
  try {
    decode_weights(stored, model_like(), f, "m.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string section_error(const nlohmann::json& s) {
  try {
    parse_weights_section(s, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(QuantizedDir, OnlyFloatingPointTwoDimensionalWeightsAreStoredMatrices) {
  EXPECT_TRUE(is_stored_matrix("l.weight", torch::zeros({2, 3})));
  EXPECT_FALSE(is_stored_matrix("l.bias", torch::zeros({2, 3})));
  EXPECT_FALSE(is_stored_matrix("conv.weight", torch::zeros({2, 1, 3})));
  EXPECT_FALSE(is_stored_matrix("norm.weight", torch::zeros({3})));
  EXPECT_FALSE(is_stored_matrix("idx.weight", torch::zeros({2, 3}, torch::kInt64)));
}

// Encoding stores the matrix in the format (int8 + one F32 scale per block of 32 inputs, or
// BF16) and everything else as it was; decoding gives exactly the reference dequantization
// (core/quant.h) and the other tensors bit for bit.
TEST(QuantizedDir, EncodeDecodeRoundTripsThroughTheReferenceFormats) {
  const auto model = model_like();
  for (auto f : {WeightFormat::int8, WeightFormat::bf16}) {
    SCOPED_TRACE(weight_format_name(f));
    EncodeStats stats;
    const auto stored = encode_weights(model, f, &stats);
    EXPECT_EQ(stats.matrices, 1);
    EXPECT_GT(stats.max_abs_error, 0.0);
    const auto& w = model.at("l.weight");
    if (f == WeightFormat::int8) {
      EXPECT_EQ(stored.size(), model.size() + 1);
      EXPECT_EQ(stored.at("l.weight").scalar_type(), torch::kInt8);
      EXPECT_EQ(stored.at("l.weight_scale").sizes(), (std::vector<int64_t>{3, 2}));
      EXPECT_LE(stats.max_abs_error, w.abs().max().item<double>() / 127 * 0.5 + 1e-7);
    } else {
      EXPECT_EQ(stored.size(), model.size());
      EXPECT_EQ(stored.at("l.weight").scalar_type(), torch::kBFloat16);
      EXPECT_LE(stats.max_abs_error, w.abs().max().item<double>() / 256);
    }
    const auto decoded = decode_weights(stored, model, f, "m.safetensors");
    ASSERT_EQ(decoded.size(), model.size());
    std::vector<float> want(3 * 40);
    if (f == WeightFormat::int8)
      dequantize_q8(stored.at("l.weight").data_ptr<int8_t>(),
                    stored.at("l.weight_scale").data_ptr<float>(), 3, 40, want.data());
    else
      for (int64_t i = 0; i < 120; ++i)
        want[i] = bf16_to_float(float_to_bf16(w.data_ptr<float>()[i]));
    const auto got = decoded.at("l.weight").contiguous();
    EXPECT_EQ(std::vector<float>(got.data_ptr<float>(), got.data_ptr<float>() + 120), want);
    for (const std::string n : {"l.bias", "conv.weight", "steps"})
      EXPECT_TRUE(torch::equal(decoded.at(n), model.at(n))) << n;
  }
}

// One malformed variant at a time, each refused with a message that names what is wrong.
TEST(QuantizedDir, TheStrictReaderRefusesEveryMalformedVariant) {
  const auto good8 = encode_weights(model_like(), WeightFormat::int8);
  const auto good16 = encode_weights(model_like(), WeightFormat::bf16);
  ASSERT_EQ(decode_error(good8, WeightFormat::int8), "");
  ASSERT_EQ(decode_error(good16, WeightFormat::bf16), "");
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::string what, expect;
    WeightFormat f;
    std::function<void(TensorMap&)> change;
  };
  const std::vector<Case> cases = {
      {"matrix stored as F32 in an int8 dir", "has dtype F32, expected I8", WeightFormat::int8,
       [](TensorMap& t) {
         t["l.weight"] = torch::zeros({3, 40});
       }},
      {"bf16 matrix declared int8", "\"l.weight\" has dtype BF16", WeightFormat::int8,
       [&](TensorMap& t) { t = good16; }},
      {"int8 matrix declared bf16", "orphan scale tensor \"l.weight_scale\"", WeightFormat::bf16,
       [](TensorMap&) {}},
      {"missing scale", "has no scale tensor \"l.weight_scale\"", WeightFormat::int8,
       [](TensorMap& t) { t.erase("l.weight_scale"); }},
      {"scale of another dtype", "\"l.weight_scale\" has dtype F64", WeightFormat::int8,
       [](TensorMap& t) {
         t["l.weight_scale"] = torch::ones({3, 2}, torch::kDouble);
       }},
      {"scale of another shape", "\"l.weight_scale\" has shape [3, 1]", WeightFormat::int8,
       [](TensorMap& t) {
         t["l.weight_scale"] = torch::ones({3, 1});
       }},
      {"orphan scale", "orphan scale tensor \"l.bias_scale\"", WeightFormat::int8,
       [](TensorMap& t) { t["l.bias_scale"] = torch::ones({3}); }},
      {"negative scale", "holds -1 at [1, 0]", WeightFormat::int8,
       [](TensorMap& t) { t["l.weight_scale"][1][0] = -1.f; }},
      {"NaN scale", "holds nan at [2, 1]", WeightFormat::int8,
       [](TensorMap& t) { t["l.weight_scale"][2][1] = std::nanf(""); }},
      {"infinite scale", "holds inf at [0, 0]", WeightFormat::int8,
       [&](TensorMap& t) { t["l.weight_scale"][0][0] = inf; }},
      {"overflowing scale", "FLT_MAX / 127", WeightFormat::int8,
       [](TensorMap& t) { t["l.weight_scale"][0][1] = std::numeric_limits<float>::max() / 2; }},
      {"missing tensor", "l.bias", WeightFormat::int8, [](TensorMap& t) { t.erase("l.bias"); }},
      {"extra tensor", "extra", WeightFormat::int8,
       [](TensorMap& t) { t["extra.thing"] = torch::ones({1}); }},
      {"misshapen matrix", "l.weight", WeightFormat::int8,
       [](TensorMap& t) {
         t["l.weight"] = torch::zeros({3, 41}, torch::kInt8);
       }},
      {"non-matrix stored narrow", "\"l.bias\" has dtype BF16, expected F32", WeightFormat::bf16,
       [](TensorMap& t) { t["l.bias"] = t["l.bias"].to(torch::kBFloat16); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    TensorMap t = c.f == WeightFormat::int8 ? good8 : good16;
    if (c.what == "int8 matrix declared bf16") t = good8;
    for (auto& [n, v] : t) v = v.clone();
    c.change(t);
    const auto e = decode_error(t, c.f);
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
    EXPECT_NE(e.find("m.safetensors"), std::string::npos) << e;
  }
}

TEST(QuantizedDir, TheWeightsSectionIsCheckedFieldByField) {
  EXPECT_EQ(parse_weights_section(weights_section(WeightFormat::int8), "c"), WeightFormat::int8);
  EXPECT_EQ(parse_weights_section(weights_section(WeightFormat::bf16), "c"), WeightFormat::bf16);
  EXPECT_NE(section_error({{"format", "int8"}, {"block", 64}}).find("blocks of 32 only"),
            std::string::npos);
  EXPECT_NE(section_error({{"format", "int8"}}).find("needs \"block\""), std::string::npos);
  EXPECT_NE(section_error({{"format", "bf16"}, {"block", 32}}).find("belongs to int8"),
            std::string::npos);
  EXPECT_NE(section_error({{"format", "f32"}}).find("not a stored format"), std::string::npos);
  EXPECT_NE(section_error({{"format", "q4"}}).find("not a stored format"), std::string::npos);
  EXPECT_NE(
      section_error({{"format", "int8"}, {"block", 32}, {"bits", 8}}).find("weights.\"bits\""),
      std::string::npos)
      << section_error({{"format", "int8"}, {"block", 32}, {"bits", 8}});
  EXPECT_NE(section_error("int8").find("must be an object"), std::string::npos);
  EXPECT_NE(section_error({{"block", 32}}).find("needs a string \"format\""), std::string::npos);
}

// A whole model: save_stored_model_dir then load_model_dir gives the decoded weights, reports the
// format, and a directory whose config.json names a format its tensors do not have is refused.
TEST(QuantizedDir, StoredDirectoriesLoadDequantizedAndReportTheirFormat) {
  ModelConfig c;
  c.mixer = small_config("softmax");
  c.vocab_size = 40;
  c.validate();
  torch::manual_seed(4);
  SeqModel m(c);
  for (auto f : {WeightFormat::int8, WeightFormat::bf16}) {
    SCOPED_TRACE(weight_format_name(f));
    const auto dir = (fs::temp_directory_path() /
                      ("seqlab_test_quantized_" + std::to_string(getpid()) + weight_format_name(f)))
                         .string();
    fs::remove_all(dir);
    save_stored_model_dir(dir, *m, nlohmann::json::object(), f);
    auto loaded = load_model_dir(dir);
    EXPECT_EQ(loaded.weights, f);
    const auto want =
        decode_weights(encode_weights(model_tensors(*m), f), model_tensors(*m), f, "");
    for (const auto& [name, t] : model_tensors(*loaded.model))
      EXPECT_TRUE(torch::equal(t, want.at(name))) << name;
    // config.json says the other format: the tensors' dtypes disagree.
    auto j = read_config_json(dir);
    j[kWeightsSection] =
        weights_section(f == WeightFormat::int8 ? WeightFormat::bf16 : WeightFormat::int8);
    std::ofstream(fs::path(dir) / kConfigFile) << j.dump();
    try {
      load_model_dir(dir);
      ADD_FAILURE() << "a directory whose tensors contradict config.json loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
  }
}
