// Hugging Face GPT-2 interop (model/hf_gpt2.h). The checkpoints are tiny random GPT-2s written in
// HF's layout inside the test; the reference is GPT-2's forward pass computed here with plain torch
// ops, in double precision, straight from the HF tensors (Conv1D x W + b, packed qkv, causal
// softmax, gelu_new, pre-norm, tied head). It shares no code with SeqModel.
#include "cli_testing.h"
#include <gtest/gtest.h>

#include "seqlab/convert/convert.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/hf_gpt2.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

// L = layers, D = n_embd, H = heads, V = vocab, P = n_positions, I = n_inner.
constexpr int64_t L = 2, D = 32, H = 4, V = 50, P = 64, I = 4 * D;

fs::path scratch() {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("seqlab_test_hf_gpt2." + std::to_string(getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// Removes the scratch directory after the last test.
struct ScratchCleanup : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch(), ec);
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

std::string tmp_dir(const std::string& name) {
  auto d = scratch() / name;
  fs::remove_all(d);
  return d.string();
}

nlohmann::json hf_config(int64_t vocab = V) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_embd", D},
          {"n_head", H},
          {"n_layer", L},
          {"n_positions", P},
          {"n_ctx", P},
          {"vocab_size", vocab},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", 1e-5},
          {"n_inner", nullptr},
          {"tie_word_embeddings", true},
          {"attn_pdrop", 0.1},
          {"transformers_version", "4.30.0"}};
}

// A random GPT-2 in HF names. Weights are large enough (std 0.2) that the MLP's inputs reach the
// range where gelu_new and the exact gelu differ by ~1e-4, so the test sees which one was used.
TensorMap random_hf_tensors(bool prefix, bool buffers, bool lm_head, int64_t vocab = V,
                            uint64_t seed = 7, int64_t inner = I) {
  torch::manual_seed(seed);
  const std::string p = prefix ? "transformer." : "";
  auto w = [](std::vector<int64_t> shape) { return torch::randn(shape) * 0.2; };
  auto ln_w = [] { return 1.0 + torch::randn({D}) * 0.1; };
  TensorMap t;
  t[p + "wte.weight"] = w({vocab, D});
  t[p + "wpe.weight"] = w({P, D});
  for (int64_t i = 0; i < L; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".";
    t[h + "ln_1.weight"] = ln_w();
    t[h + "ln_1.bias"] = w({D}) * 0.5;
    t[h + "attn.c_attn.weight"] = w({D, 3 * D});
    t[h + "attn.c_attn.bias"] = w({3 * D}) * 0.5;
    t[h + "attn.c_proj.weight"] = w({D, D});
    t[h + "attn.c_proj.bias"] = w({D}) * 0.5;
    t[h + "ln_2.weight"] = ln_w();
    t[h + "ln_2.bias"] = w({D}) * 0.5;
    t[h + "mlp.c_fc.weight"] = w({D, inner});
    t[h + "mlp.c_fc.bias"] = w({inner}) * 0.5;
    t[h + "mlp.c_proj.weight"] = w({inner, D});
    t[h + "mlp.c_proj.bias"] = w({D}) * 0.5;
    if (buffers) {
      t[h + "attn.bias"] = torch::tril(torch::ones({P, P})).view({1, 1, P, P});
      t[h + "attn.masked_bias"] = torch::tensor(-1e4);
    }
  }
  t[p + "ln_f.weight"] = ln_w();
  t[p + "ln_f.bias"] = w({D}) * 0.5;
  if (lm_head) t["lm_head.weight"] = t[p + "wte.weight"].clone();
  return t;
}

void write_hf_dir(const std::string& dir, const nlohmann::json& cfg, const TensorMap& t) {
  fs::create_directories(dir);
  save_safetensors((fs::path(dir) / "model.safetensors").string(), t, {{"format", "pt"}});
  write_file_atomic((fs::path(dir) / "config.json").string(), cfg.dump(2));
}

// The tensor `name` (without prefix) of an HF map that may or may not carry "transformer.".
torch::Tensor hf_get(const TensorMap& t, const std::string& name) {
  auto it = t.find(name);
  if (it == t.end()) it = t.find("transformer." + name);
  EXPECT_TRUE(it != t.end()) << name;
  return it->second.to(torch::kFloat64);
}

// GPT-2's forward pass (Radford et al. 2019; HF's modeling_gpt2.py), from the HF tensors:
// tokens [B,T] -> logits [B,T,V], float64.
torch::Tensor gpt2_reference(const TensorMap& t, const torch::Tensor& tokens, bool gelu_tanh = true,
                             double eps = 1e-5) {
  namespace F = torch::nn::functional;
  const int64_t B = tokens.size(0), T = tokens.size(1), Dh = D / H;
  auto g = [&](const std::string& n) { return hf_get(t, n); };
  auto ln = [&](const torch::Tensor& x, const std::string& n) {
    return torch::layer_norm(x, {D}, g(n + ".weight"), g(n + ".bias"), eps);
  };
  auto conv1d = [&](const torch::Tensor& x, const std::string& n) {  // y = x W + b, W [in,out]
    return torch::matmul(x, g(n + ".weight")) + g(n + ".bias");
  };
  auto x = g("wte.weight").index_select(0, tokens.reshape({-1})).view({B, T, D}) +
           g("wpe.weight").narrow(0, 0, T);  // [B,T,D]
  const auto causal = torch::ones({T, T}, torch::kBool).tril();
  for (int64_t i = 0; i < L; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    auto qkv = conv1d(ln(x, h + "ln_1"), h + "attn.c_attn");  // [B,T,3D]
    auto heads = [&](int64_t j) {                             // [B,T,D] -> [B,H,T,Dh]
      return qkv.narrow(2, j * D, D).view({B, T, H, Dh}).permute({0, 2, 1, 3});
    };
    auto q = heads(0), k = heads(1), v = heads(2);
    auto att = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(double(Dh));  // [B,H,T,T]
    att = att.masked_fill(causal.logical_not(), -INFINITY).softmax(-1);
    auto y = torch::matmul(att, v).permute({0, 2, 1, 3}).reshape({B, T, D});  // [B,T,D]
    x = x + conv1d(y, h + "attn.c_proj");
    auto m = conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc");  // [B,T,I]
    if (gelu_tanh)  // gelu_new: 0.5 m (1 + tanh(sqrt(2/pi) (m + 0.044715 m^3)))
      m = 0.5 * m * (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) * (m + 0.044715 * m.pow(3))));
    else  // exact: m Phi(m)
      m = 0.5 * m * (1.0 + torch::erf(m / std::sqrt(2.0)));
    x = x + conv1d(m, h + "mlp.c_proj");
  }
  return torch::matmul(ln(x, "ln_f"), g("wte.weight").t());  // tied head: [B,T,V]
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// seqlab's logits, both forms, against the reference.
void expect_matches_reference(SeqModelImpl& m, const TensorMap& hf, bool gelu_tanh = true,
                              double eps = 1e-5) {
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  const int64_t B = 2, T = 17;
  auto tokens = torch::randint(0, V, {B, T}, torch::kLong);
  auto ref = gpt2_reference(hf, tokens, gelu_tanh, eps);  // [B,T,V]
  auto logits = m.forward(tokens);                        // [B,T,V]
  ASSERT_EQ(logits.sizes(), ref.sizes());
  EXPECT_LE(max_diff(logits, ref), 1e-5) << "forward: first logits " << logits[0][0].slice(0, 0, 4)
                                         << "\nreference " << ref[0][0].slice(0, 0, 4);
  EXPECT_GT(ref.abs().max().item<double>(), 0.5);  // the check is not vacuous
  auto state = m.init_state(B);
  for (int64_t t = 0; t < T; ++t) {
    auto step = m.step(tokens.select(1, t), state);  // [B,V]
    EXPECT_LE(max_diff(step, ref.select(1, t)), 1e-5) << "step " << t;
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const seqlab::Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

}  // namespace

TEST(HfGpt2, ImportWithPrefixAndBuffersMatchesReference) {
  const auto dir = tmp_dir("prefixed");
  auto hf = random_hf_tensors(/*prefix=*/true, /*buffers=*/true, /*lm_head=*/true);
  write_hf_dir(dir, hf_config(), hf);
  auto lm = read_hf(dir);
  EXPECT_EQ(lm.config.mixer.arch, "softmax");
  EXPECT_EQ(lm.config.activation, "gelu_tanh");
  EXPECT_EQ(lm.config.pos, "learned");
  EXPECT_TRUE(lm.config.tie_embeddings);
  EXPECT_EQ(lm.config.head, "lm");
  EXPECT_EQ(lm.config.mixer.max_len, P);
  EXPECT_EQ(lm.config.mlp_ratio, 4);
  EXPECT_FALSE(lm.sections.contains("task"));           // not GPT-2's vocabulary
  EXPECT_EQ(lm.sections["hf"]["config"]["n_embd"], D);  // provenance
  EXPECT_EQ(lm.sections["hf"]["from"], fs::absolute(dir).string());
  expect_matches_reference(*lm.model, hf);
}

// A user with GPT-2 weights converts them: import, then swap attention for Hedgehog / T2R.
TEST(HfGpt2, ImportedModelConvertsToAnRnn) {
  const auto dir = tmp_dir("to_convert");
  auto hf = random_hf_tensors(/*prefix=*/true, /*buffers=*/true, /*lm_head=*/true);
  write_hf_dir(dir, hf_config(), hf);
  auto lm = read_hf(dir);
  for (const char* fm : {"hedgehog", "t2r"}) {
    seqlab::ConvertConfig c;
    c.to = fm;
    auto student = seqlab::convert_model(*lm.model, c);
    EXPECT_EQ(student->config().mixer.arch, "linear");
    EXPECT_EQ(student->config().activation, "gelu_tanh");
    torch::NoGradGuard ng;
    auto tok = torch::randint(0, V, {2, 6}, torch::kLong);
    auto par = student->forward(tok);
    auto st = student->init_state(2);
    for (int64_t t = 0; t < 6; ++t) {
      auto y = student->step(tok.select(1, t), st);
      EXPECT_LT((y - par.select(1, t)).abs().max().item<double>(), 2e-5) << fm << " t=" << t;
    }
  }
}

TEST(HfGpt2, ImportWithoutPrefixMatchesReference) {
  const auto dir = tmp_dir("plain");
  auto hf = random_hf_tensors(/*prefix=*/false, /*buffers=*/true, /*lm_head=*/false, V, 11);
  write_hf_dir(dir, hf_config(), hf);
  auto lm = read_hf(dir);
  expect_matches_reference(*lm.model, hf);
}

TEST(HfGpt2, ExactGeluAndExplicitInnerWidth) {
  const auto dir = tmp_dir("gelu");
  auto hf = random_hf_tensors(false, false, false);
  auto cfg = hf_config();
  cfg["activation_function"] = "gelu";
  cfg["n_inner"] = I;
  write_hf_dir(dir, cfg, hf);
  auto lm = read_hf(dir);
  EXPECT_EQ(lm.config.activation, "gelu");
  expect_matches_reference(*lm.model, hf, /*gelu_tanh=*/false);
  // The activation matters at this weight scale: gelu_new's reference is measurably different.
  torch::NoGradGuard ng;
  auto tokens = torch::randint(0, V, {2, 17}, torch::kLong);
  EXPECT_GT(max_diff(lm.model->forward(tokens), gpt2_reference(hf, tokens, true)), 1e-4);
}

TEST(HfGpt2, ShardedCheckpoint) {
  const auto dir = tmp_dir("sharded");
  auto hf = random_hf_tensors(true, true, false);
  fs::create_directories(dir);
  TensorMap a, b;
  nlohmann::json map;
  for (const auto& [n, t] : hf) {
    const bool first = n.find("h.1.") == std::string::npos;
    (first ? a : b)[n] = t;
    map[n] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  save_safetensors(dir + "/model-00001-of-00002.safetensors", a, {{"format", "pt"}});
  save_safetensors(dir + "/model-00002-of-00002.safetensors", b, {{"format", "pt"}});
  write_file_atomic(
      dir + "/model.safetensors.index.json",
      nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump());
  write_file_atomic(dir + "/config.json", hf_config().dump());
  auto lm = read_hf(dir);
  expect_matches_reference(*lm.model, hf);
}

TEST(HfGpt2, ExportImportRoundTrip) {
  const auto hf_dir = tmp_dir("rt_hf"), model_dir = tmp_dir("rt_model"),
             hf2_dir = tmp_dir("rt_hf2"), model2_dir = tmp_dir("rt_model2");
  auto hf = random_hf_tensors(false, true, true);
  write_hf_dir(hf_dir, hf_config(), hf);
  auto first = import_hf(hf_dir, model_dir).model;
  auto loaded = load_model_dir(model_dir);  // the seqlab directory is a normal model directory
  EXPECT_EQ(loaded.config.activation, "gelu_tanh");
  export_hf(model_dir, hf2_dir);

  // The exported file holds GPT-2's tensors, bit for bit, under HF names.
  auto file = load_safetensors(hf2_dir + "/model.safetensors");
  EXPECT_EQ(file.metadata.at("format"), "pt");
  int64_t n = 0;
  for (const auto& [name, t] : hf) {
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (name == "lm_head.weight" || ends_with(".attn.bias") || ends_with(".attn.masked_bias"))
      continue;  // not written: transformers re-ties and rebuilds them
    ++n;
    auto it = file.tensors.find("transformer." + name);
    ASSERT_NE(it, file.tensors.end()) << name;
    EXPECT_TRUE(torch::equal(it->second, t)) << name;
  }
  EXPECT_EQ(static_cast<int64_t>(file.tensors.size()), n);
  const auto cfg = nlohmann::json::parse(read_file(hf2_dir + "/config.json"));
  EXPECT_EQ(cfg["model_type"], "gpt2");
  EXPECT_EQ(cfg["activation_function"], "gelu_new");
  EXPECT_EQ(cfg["n_inner"], I);
  EXPECT_EQ(cfg["n_positions"], P);
  EXPECT_EQ(cfg["architectures"][0], "GPT2LMHeadModel");

  // ... and imports back to the same seqlab tensors and logits.
  auto second = import_hf(hf2_dir, model2_dir).model;
  auto t1 = model_tensors(*first.model), t2 = model_tensors(*second.model);
  ASSERT_EQ(t1.size(), t2.size());
  for (const auto& [name, t] : t1) EXPECT_TRUE(torch::equal(t, t2.at(name))) << name;
  torch::NoGradGuard ng;
  auto tokens = torch::randint(0, V, {2, 11}, torch::kLong);
  EXPECT_TRUE(torch::equal(first.model->forward(tokens), second.model->forward(tokens)));
}

TEST(HfGpt2, Gpt2VocabularyRecordsTheLmTask) {
  const auto hf_dir = tmp_dir("v50257"), out = tmp_dir("v50257_out");
  write_hf_dir(hf_dir, hf_config(kGpt2VocabSize),
               random_hf_tensors(false, false, false, kGpt2VocabSize));
  import_hf(hf_dir, out);
  const auto j = read_config_json(out);
  ASSERT_TRUE(j.contains("task"));
  EXPECT_EQ(j["task"]["task"], "lm");
  EXPECT_EQ(j["task"]["tokenizer"], "gpt2");
  EXPECT_EQ(j["task"]["max_len"], P);
  EXPECT_EQ(TaskConfig::from_json(j["task"], out).tokenizer, "gpt2");  // a valid task section
}

TEST(HfGpt2, ConfigRefusals) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"layer_norm_epsilon", "1e-6", "layer_norm_epsilon"},
      {"n_inner", -48, "n_inner"},
      {"activation_function", "relu", "activation_function 'relu'"},
      {"model_type", "bert", "model_type 'bert' is not supported"},
      {"tie_word_embeddings", false, "tie_word_embeddings"},
      {"scale_attn_by_inverse_layer_idx", true, "scale_attn_by_inverse_layer_idx"},
      {"architectures", {"GPT2ForSequenceClassification"}, "GPT2ForSequenceClassification"},
      {"n_head", 5, "n_embd 32 is not divisible by n_head 5"},
      {"n_embd", "32", "n_embd"},
      {"n_layer", nullptr, "missing \"n_layer\""},
  };
  auto hf = random_hf_tensors(false, false, false);
  for (const auto& c : cases) {
    const auto dir = tmp_dir(std::string("bad_") + c.key);
    auto cfg = hf_config();
    cfg[c.key] = c.value;
    write_hf_dir(dir, cfg, hf);
    const auto err = error_of([&] { read_hf(dir); });
    EXPECT_HAS(err, c.needle);
    EXPECT_HAS(err, "config.json");
  }
  EXPECT_HAS(error_of([&] { read_hf(tmp_dir("nothing")); }), "not a directory");
  const auto dir = tmp_dir("max_context");
  write_hf_dir(dir, hf_config(), hf);
  EXPECT_HAS(error_of([&] { read_hf(dir, nullptr, P / 2); }), "learned positions fix");
  EXPECT_EQ(read_hf(dir, nullptr, 2 * P).config.mixer.max_len, P);  // no cap needed
}

// seqlab's norm_eps and d_mlp reproduce any layer_norm_epsilon and n_inner exactly.
TEST(HfGpt2, AnyEpsilonAndInnerWidth) {
  const auto dir = tmp_dir("eps_inner");
  auto hf = random_hf_tensors(false, false, false, V, 5, /*inner=*/48);
  auto cfg = hf_config();
  cfg["layer_norm_epsilon"] = 1e-3;
  cfg["n_inner"] = 48;  // not a multiple of n_embd 32
  write_hf_dir(dir, cfg, hf);
  auto lm = read_hf(dir);
  EXPECT_EQ(lm.config.norm_eps, 1e-3);
  EXPECT_EQ(lm.config.mlp_width(), 48);
  expect_matches_reference(*lm.model, hf, true, 1e-3);
  // The epsilon matters at this size: the 1e-5 reference is measurably different.
  torch::NoGradGuard ng;
  auto tokens = torch::randint(0, V, {2, 17}, torch::kLong);
  EXPECT_GT(max_diff(lm.model->forward(tokens), gpt2_reference(hf, tokens, true, 1e-5)), 1e-5);
}

TEST(HfGpt2, TensorRefusals) {
  const auto base = random_hf_tensors(true, true, false);
  struct Case {
    const char* name;
    std::function<void(TensorMap&)> edit;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"missing", [](TensorMap& t) { t.erase("transformer.h.1.mlp.c_fc.bias"); },
       "h.1.mlp.c_fc.bias"},
      {"extra", [](TensorMap& t) { t["transformer.h.0.attn.q_proj.weight"] = torch::zeros({D}); },
       "h.0.attn.q_proj.weight"},
      {"misshaped",
       [](TensorMap& t) {
         auto& w = t["transformer.h.0.attn.c_attn.weight"];
         w = w.t().contiguous();  // an nn.Linear layout [3D,D] where Conv1D's [D,3D] belongs
       },
       "h.0.attn.c_attn.weight"},
      {"untied",
       [](TensorMap& t) {
         t["lm_head.weight"] = torch::randn({V, D});
       },
       "lm_head.weight"},
      {"both_prefixes", [](TensorMap& t) { t["ln_f.bias"] = torch::zeros({D}); }, "ln_f.bias"},
      {"int_weight",
       [](TensorMap& t) { t["transformer.ln_f.bias"] = torch::zeros({D}, torch::kLong); },
       "ln_f.bias"},
  };
  for (const auto& c : cases) {
    const auto dir = tmp_dir(std::string("badt_") + c.name);
    auto t = base;
    c.edit(t);
    write_hf_dir(dir, hf_config(), t);
    const auto err = error_of([&] { read_hf(dir); });
    EXPECT_HAS(err, c.needle);
    EXPECT_HAS(err, "model.safetensors");
  }
  const auto dir = tmp_dir("bin_only");
  fs::create_directories(dir);
  write_file_atomic(dir + "/config.json", hf_config().dump());
  write_file_atomic(dir + "/pytorch_model.bin", "x");
  EXPECT_HAS(error_of([&] { read_hf(dir); }), "safetensors only");
}

TEST(HfGpt2, ExportRefusesWhatGpt2CannotExpress) {
  auto gpt2_like = [] {
    ModelConfig c;
    c.mixer.arch = "softmax";
    c.mixer.d_model = 16;
    c.mixer.n_head = 2;
    c.mixer.max_len = 32;
    c.vocab_size = 11;
    c.n_layer = 1;
    c.pos = "learned";
    c.activation = "gelu_tanh";
    return c;
  };
  struct Case {
    const char* name;
    std::function<void(ModelConfig&)> edit;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"ok", [](ModelConfig&) {}, "(no error)"},
      {"lstm", [](ModelConfig& c) { c.mixer.arch = "lstm"; }, "softmax attention"},
      {"t2r",
       [](ModelConfig& c) {
         c.mixer.arch = "linear";
         c.mixer.feature_map = "t2r";
       },
       "softmax attention"},
      {"bidirectional",
       [](ModelConfig& c) {
         c.mixer.causal = false;
         c.head = "tag";
         c.n_classes = 3;
       },
       "causal"},
      {"no_mlp", [](ModelConfig& c) { c.mlp_ratio = 0; }, "MLP"},
      {"sinusoidal", [](ModelConfig& c) { c.pos = "sinusoidal"; }, "learned positions"},
      {"untied", [](ModelConfig& c) { c.tie_embeddings = false; }, "tied"},
      {"tagger",
       [](ModelConfig& c) {
         c.head = "tag";
         c.n_classes = 3;
       },
       "lm head"},
  };
  for (const auto& c : cases) {
    auto cfg = gpt2_like();
    c.edit(cfg);
    const auto model_dir = tmp_dir(std::string("exp_") + c.name),
               out = tmp_dir(std::string("exp_") + c.name + "_hf");
    SeqModelImpl m(cfg);
    save_model_dir(model_dir, m);
    const auto err = error_of([&] { export_hf(model_dir, out); });
    EXPECT_HAS(err, c.needle);
    if (std::string(c.name) != "ok") {
      EXPECT_HAS(err, model_dir);
      EXPECT_FALSE(fs::exists(out)) << c.name;  // nothing written
    }
  }
}

TEST(HfGpt2, RefusesToOverwrite) {
  const auto hf_dir = tmp_dir("ow_hf"), out = tmp_dir("ow_out");
  write_hf_dir(hf_dir, hf_config(), random_hf_tensors(false, false, false));
  fs::create_directories(out);
  write_file_atomic(out + "/keep.txt", "mine");
  EXPECT_HAS(error_of([&] { import_hf(hf_dir, out); }), "already exists");
  EXPECT_EQ(read_file(out + "/keep.txt"), "mine");
  EXPECT_HAS(error_of([&] { export_hf(out, hf_dir); }), "already exists");
  // An empty directory is not overwritten, only filled.
  const auto empty = tmp_dir("ow_empty");
  fs::create_directories(empty);
  import_hf(hf_dir, empty + "/");
  EXPECT_TRUE(fs::exists(empty + "/model.safetensors"));
  for (const auto& e : fs::directory_iterator(scratch()))  // no staging directory left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(HfGpt2, OldConfigWithoutActivationLoadsAsGelu) {
  ModelConfig c;
  c.vocab_size = 5;
  auto j = c.to_json();
  EXPECT_EQ(j["activation"], "gelu");
  j.erase("activation");
  EXPECT_EQ(ModelConfig::from_json(j, "old.json").activation, "gelu");
  j["activation"] = "swish";
  EXPECT_HAS(error_of([&] { ModelConfig::from_json(j, "bad.json"); }), "activation");
}

// ---- the CLI -----------------------------------------------------------------------------------

TEST(HfGpt2, Cli) {
  const auto hf_dir = tmp_dir("cli_hf"), out = tmp_dir("cli_out"), hf2 = tmp_dir("cli_hf2");
  auto hf = random_hf_tensors(true, true, false);
  write_hf_dir(hf_dir, hf_config(), hf);

  auto r = seqlab::testing::run_seqlab("import-hf --hf " + hf_dir + " --out " + out + " --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_HAS(r.out, "imported GPT-2");
  auto lm = load_model_dir(out);
  expect_matches_reference(*lm.model, hf);

  r = seqlab::testing::run_seqlab("export-hf --model " + out + " --out " + hf2 + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(hf2 + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(hf2 + "/config.json"));

  r = seqlab::testing::run_seqlab("import-hf --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_HAS(r.out, "--hf");
  EXPECT_HAS(r.out, "GPT2LMHeadModel");

  // A bad HF directory: exit 2, one "error: ..." line naming the problem, nothing written.
  const auto bad = tmp_dir("cli_bad"), bad_out = tmp_dir("cli_bad_out");
  auto cfg = hf_config();
  cfg["activation_function"] = "relu";
  write_hf_dir(bad, cfg, hf);
  r = seqlab::testing::run_seqlab("import-hf --hf " + bad + " --out " + bad_out);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_HAS(r.err, "activation_function");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(bad_out));

  r = seqlab::testing::run_seqlab("export-hf --model " + hf_dir + " --out " +
                                  bad_out);  // an HF dir is not a model dir
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}
