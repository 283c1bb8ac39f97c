// What every Hugging Face family shares (model/hf_import.h): dispatch on model_type, sharded
// reading, the refusals of bad input (each naming the field or tensor and the file, exit 2 from
// the CLI), and export's choice of family, including the models no family can express.
#include "cli_testing.h"
#include <gtest/gtest.h>

#include "hf_testing.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/hf_gpt2.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new HfScratchCleanup);

// Rewrites one safetensors file of a directory through `edit`.
void edit_tensors(const std::string& file, const std::function<void(TensorMap&)>& edit) {
  auto f = load_safetensors(file);
  edit(f.tensors);
  save_safetensors(file, f.tensors, f.metadata);
}

// The seqlab config of a small model, edited.
ModelConfig small(const std::function<void(ModelConfig&)>& edit) {
  ModelConfig c;
  c.mixer.arch = "softmax";
  c.mixer.d_model = 16;
  c.mixer.n_head = 4;
  c.mixer.max_len = 32;
  c.vocab_size = 11;
  c.n_layer = 2;
  edit(c);
  c.validate();
  return c;
}

void llama_like(ModelConfig& c) {
  c.mixer.rope = true;
  c.mixer.n_kv_head = 2;
  c.mixer.qkv_bias = c.mixer.o_bias = false;
  c.norm = "rms";
  c.mlp = "swiglu";
  c.d_mlp = 40;
  c.mlp_bias = false;
  c.tie_embeddings = false;
}

void neox_like(ModelConfig& c) {
  c.mixer.rope = true;
  c.mixer.rope_fraction = 0.5;
  c.parallel_residual = true;
  c.tie_embeddings = false;
}

std::string saved(const std::string& name, const ModelConfig& cfg) {
  const auto dir = hf_tmp(name);
  torch::manual_seed(1);
  SeqModelImpl m(cfg);
  save_model_dir(dir, m);
  return dir;
}

}  // namespace

TEST(HfImport, UnsupportedModelTypeNamesTheSupportedOnes) {
  const auto dir = hf_copy("llama", "type_xyz");
  hf_edit_config(dir, [](nlohmann::json& j) { j["model_type"] = "xyz"; });
  const std::string want = dir +
                           "/config.json: model_type 'xyz' is not supported (supported: "
                           "gpt2, llama, mistral, qwen2, gpt_neox)";
  EXPECT_EQ(hf_error_of([&] { read_hf(dir); }), want);
  const auto out = hf_tmp("type_xyz_out");
  auto r = run_seqlab("import-hf --hf " + dir + " --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: " + want + "\n");
  EXPECT_FALSE(fs::exists(out));
}

TEST(HfImport, QuantizedCheckpointsAreRefusedByName) {
  {
    const auto dir = hf_copy("llama", "q_config");
    hf_edit_config(dir, [](nlohmann::json& j) {
      j["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
    });
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, dir + "/config.json: quantization_config (quant_method 'gptq')");
  }
  {  // GPTQ/AWQ tensors without a quantization_config
    const auto dir = hf_copy("mistral", "q_tensors");
    edit_tensors(dir + "/model.safetensors", [](TensorMap& t) {
      t["model.layers.0.self_attn.q_proj.qweight"] = torch::zeros({4, 32}, torch::kInt32);
    });
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, "model.layers.0.self_attn.q_proj.qweight");
    EXPECT_HF_HAS(err, "quantized");
    EXPECT_HF_HAS(err, dir + "/model.safetensors");
  }
  {  // an integer weight
    const auto dir = hf_copy("mistral", "q_int8");
    edit_tensors(dir + "/model.safetensors", [](TensorMap& t) {
      auto& w = t["model.layers.1.mlp.up_proj.weight"];
      w = w.to(torch::kInt8);
    });
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, "model.layers.1.mlp.up_proj.weight");
    EXPECT_HF_HAS(err, "dtype Char");
    EXPECT_HF_HAS(err, dir + "/model.safetensors");
  }
}

TEST(HfImport, ShardIndexNamingAMissingFile) {
  const auto dir = hf_copy("llama", "missing_shard");
  fs::remove(dir + "/model-00002-of-00002.safetensors");
  const auto err = hf_error_of([&] { read_hf(dir); });
  EXPECT_HF_HAS(
      err,
      dir + "/model.safetensors.index.json: shard 'model-00002-of-00002.safetensors' is missing");

  const auto lied = hf_copy("llama", "lying_index");
  auto j = hf_read_json(lied + "/model.safetensors.index.json");
  j["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";  // it is in 00002
  write_file_atomic(lied + "/model.safetensors.index.json", j.dump());
  const auto err2 = hf_error_of([&] { read_hf(lied); });
  EXPECT_HF_HAS(err2, "model.norm.weight");
  EXPECT_HF_HAS(err2, "model.safetensors.index.json");

  const auto escape = hf_copy("llama", "escaping_index");
  j["weight_map"]["model.norm.weight"] = "../model.safetensors";
  write_file_atomic(escape + "/model.safetensors.index.json", j.dump());
  EXPECT_HF_HAS(hf_error_of([&] { read_hf(escape); }), "must be a file name");
}

TEST(HfImport, UnexpectedAndMissingTensorsAreNamed) {
  struct Case {
    const char* name;
    std::function<void(TensorMap&)> edit;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"extra",
       [](TensorMap& t) {
         t["model.layers.0.self_attn.rotary_emb.cos_cached"] = torch::zeros({4});
       },
       "extra tensor \"model.layers.0.self_attn.rotary_emb.cos_cached\""},
      {"missing", [](TensorMap& t) { t.erase("model.layers.1.post_attention_layernorm.weight"); },
       "missing tensor \"model.layers.1.post_attention_layernorm.weight\""},
      {"misshaped",
       [](TensorMap& t) {
         auto& w = t["model.layers.0.self_attn.k_proj.weight"];  // [G*Dh, D] = [8, 32]
         w = torch::zeros({32, 32});
       },
       "\"model.layers.0.self_attn.k_proj.weight\" has shape [32, 32], expected [8, 32]"},
      {"bias", [](TensorMap& t) { t["model.layers.0.self_attn.o_proj.bias"] = torch::zeros({32}); },
       "extra tensor \"model.layers.0.self_attn.o_proj.bias\""},
  };
  for (const auto& c : cases) {
    const auto dir = hf_copy("mistral", std::string("tensors_") + c.name);
    edit_tensors(dir + "/model.safetensors", c.edit);
    const auto err = hf_error_of([&] { read_hf(dir); });
    EXPECT_HF_HAS(err, c.needle);
    EXPECT_HF_HAS(err, dir + "/model.safetensors");
  }
}

TEST(HfImport, MissingFilesAndDirectories) {
  EXPECT_HF_HAS(hf_error_of([&] { read_hf(hf_tmp("nothing")); }), "not a directory");
  const auto dir = hf_copy("mistral", "no_weights");
  fs::remove(dir + "/model.safetensors");
  EXPECT_HF_HAS(hf_error_of([&] { read_hf(dir); }), "model.safetensors: missing");
  fs::remove(dir + "/config.json");
  EXPECT_HF_HAS(hf_error_of([&] { read_hf(dir); }), "config.json: missing");
  const auto bad = hf_copy("mistral", "bad_json");
  write_file_atomic(bad + "/config.json", "{\"model_type\": ");
  EXPECT_HF_HAS(hf_error_of([&] { read_hf(bad); }), "config.json: not valid JSON");
}

// ---- export ------------------------------------------------------------------------------------

TEST(HfImport, ExportPicksTheFamilyAndRoundTrips) {
  struct Case {
    const char* name;
    std::function<void(ModelConfig&)> edit;
    const char* type;
  };
  const std::vector<Case> cases = {
      {"llama", llama_like, "llama"},
      {"llama_biases",
       [](ModelConfig& c) {
         llama_like(c);
         c.mixer.qkv_bias = c.mixer.o_bias = c.mlp_bias = true;
         c.tie_embeddings = true;
       },
       "llama"},
      {"qwen2",
       [](ModelConfig& c) {
         llama_like(c);
         c.mixer.qkv_bias = true;
       },
       "qwen2"},
      {"neox", neox_like, "gpt_neox"},
      {"neox_tanh",
       [](ModelConfig& c) {
         neox_like(c);
         c.activation = "gelu_tanh";
         c.parallel_residual = false;
         c.norm_eps = 1e-6;
       },
       "gpt_neox"},
      {"gpt2",
       [](ModelConfig& c) {
         c.pos = "learned";
         c.activation = "gelu_tanh";
         c.norm_eps = 1e-6;  // GPT-2's layer_norm_epsilon carries it
         c.d_mlp = 24;       // and n_inner any width
       },
       "gpt2"},
  };
  for (const auto& c : cases) {
    const auto dir = saved(std::string("exp_") + c.name, small(c.edit));
    const auto hf = hf_tmp(std::string("exp_") + c.name + "_hf"),
               back = hf_tmp(std::string("exp_") + c.name + "_back");
    auto ex = export_hf(dir, hf);
    EXPECT_EQ(ex.model_type, c.type) << c.name;
    EXPECT_EQ(hf_read_json(hf + "/config.json")["model_type"], c.type) << c.name;
    auto im = import_hf(hf, back);
    EXPECT_EQ(im.model_type, c.type);
    auto a = load_model_dir(dir), b = load_model_dir(back);
    auto ta = model_tensors(*a.model), tb = model_tensors(*b.model);
    ASSERT_EQ(ta.size(), tb.size()) << c.name;
    for (const auto& [n, t] : ta) EXPECT_TRUE(torch::equal(t, tb.at(n))) << c.name << " " << n;
    torch::NoGradGuard ng;
    auto tokens = torch::randint(0, 11, {2, 9}, torch::kLong);
    EXPECT_TRUE(torch::equal(a.model->forward(tokens), b.model->forward(tokens))) << c.name;
  }
}

TEST(HfImport, ExportRefusesWhatNoFamilyExpresses) {
  struct Case {
    const char* name;
    std::function<void(ModelConfig&)> edit;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"linear_attention", [](ModelConfig& c) { c.mixer.arch = "linear"; }, "softmax attention"},
      {"lstm", [](ModelConfig& c) { c.mixer.arch = "lstm"; }, "softmax attention"},
      {"learned_rms",
       [](ModelConfig& c) {
         c.pos = "learned";
         c.norm = "rms";
       },
       "no Hugging Face family"},
      {"rope_rms_plain",
       [](ModelConfig& c) {
         c.mixer.rope = true;
         c.norm = "rms";
       },
       "no Hugging Face family"},
      {"llama_partial_rope",
       [](ModelConfig& c) {
         llama_like(c);
         c.mixer.rope_fraction = 0.5;
       },
       "rotates every head dim"},
      {"llama_parallel",
       [](ModelConfig& c) {
         llama_like(c);
         c.parallel_residual = true;
       },
       "parallel residual"},
      {"qwen_mlp_bias",
       [](ModelConfig& c) {
         llama_like(c);
         c.mixer.qkv_bias = true;
         c.mlp_bias = true;
       },
       "fit no family"},
      {"neox_gqa",
       [](ModelConfig& c) {
         neox_like(c);
         c.mixer.n_kv_head = 2;
       },
       "grouped-query"},
      {"neox_no_mlp_bias",
       [](ModelConfig& c) {
         neox_like(c);
         c.mlp_bias = false;
       },
       "mlp_bias false"},
      {"neox_odd_rope",
       [](ModelConfig& c) {
         neox_like(c);
         c.mixer.rope_fraction = 0.75;  // 3 of d_head 4
       },
       "odd"},
      {"gpt2_gqa",
       [](ModelConfig& c) {
         c.pos = "learned";
         c.mixer.n_kv_head = 2;
       },
       "grouped-query"},
      {"gpt2_parallel",
       [](ModelConfig& c) {
         c.pos = "learned";
         c.parallel_residual = true;
       },
       "parallel residual"},
      {"gpt2_no_bias",
       [](ModelConfig& c) {
         c.pos = "learned";
         c.mixer.o_bias = false;
       },
       "biases on every projection"},
      {"no_mlp", [](ModelConfig& c) { c.mlp_ratio = 0; }, "MLP"},
  };
  for (const auto& c : cases) {
    const auto dir = saved(std::string("ref_") + c.name, small(c.edit));
    const auto out = hf_tmp(std::string("ref_") + c.name + "_hf");
    const auto err = hf_error_of([&] { export_hf(dir, out); });
    EXPECT_HF_HAS(err, c.needle);
    EXPECT_HF_HAS(err, dir);
    EXPECT_FALSE(fs::exists(out)) << c.name;
  }
}

TEST(HfImport, Gpt2ExpressibleRefusesTheNewOptions) {
  const std::vector<std::pair<std::function<void(ModelConfig&)>, const char*>> cases = {
      {[](ModelConfig& c) { c.mixer.rope = true; }, "rotary"},
      {[](ModelConfig& c) { c.norm = "rms"; }, "LayerNorm"},
      {[](ModelConfig& c) { c.mlp = "swiglu"; }, "plain MLP"},
      {[](ModelConfig& c) { c.mixer.n_kv_head = 1; }, "grouped-query"},
      {[](ModelConfig& c) { c.mixer.qkv_bias = false; }, "biases"},
      {[](ModelConfig& c) { c.mlp_bias = false; }, "biases"},
      {[](ModelConfig& c) { c.parallel_residual = true; }, "parallel residual"},
  };
  for (const auto& [edit, needle] : cases) {
    auto cfg = small([&](ModelConfig& c) {
      c.pos = "learned";
      edit(c);
    });
    SeqModelImpl m(cfg);
    EXPECT_HF_HAS(hf_error_of([&] { check_gpt2_expressible(m, "m"); }), needle);
  }
}

TEST(HfImport, CliImportsAndExportsEveryFamily) {
  for (const char* family : {"llama", "qwen2", "mistral", "gpt_neox"}) {
    const auto out = hf_tmp(std::string("cli_") + family),
               hf = hf_tmp(std::string("cli_hf_") + family);
    auto r = run_seqlab("import-hf --hf " + hf_fixture(family).string() + " --out " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_HF_HAS(r.out, "imported " + hf_family_name(family) + ": 2 layers");
    r = run_seqlab("export-hf --model " + out + " --out " + hf + " -q");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_HF_HAS(r.out, "exported ");
    EXPECT_TRUE(fs::exists(hf + "/model.safetensors"));
  }
  const auto dir = hf_copy("mistral", "cli_window"), out = hf_tmp("cli_window_out");
  hf_edit_config(dir, [](nlohmann::json& j) { j["sliding_window"] = 16; });
  auto r = run_seqlab("import-hf --hf " + dir + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HF_HAS(r.err, "sliding_window 16");  // the note, on stderr
  EXPECT_HF_HAS(r.out, "context 16");

  const auto bad = hf_copy("gpt_neox", "cli_bad"), bad_out = hf_tmp("cli_bad_out");
  hf_edit_config(bad, [](nlohmann::json& j) { j["rope_scaling"] = {{"type", "linear"}}; });
  r = run_seqlab("import-hf --hf " + bad + " --out " + bad_out);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: " + bad + "/config.json: rope_scaling type 'linear'", 0), 0u)
      << r.err;
  EXPECT_FALSE(fs::exists(bad_out));
}
