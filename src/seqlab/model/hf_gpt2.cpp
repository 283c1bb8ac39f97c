#include "seqlab/model/hf_gpt2.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/tasks/task.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

const char* kPrefix = "transformer.";
const char* kIndexFile = "model.safetensors.index.json";

// The value of `key`, or nullptr when it is missing or null (HF writes null for "use the default").
const nlohmann::json* find_key(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t positive_int(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto* v = find_key(j, key);
  SEQLAB_CHECK(v, "{}: missing \"{}\" (not a GPT-2 config?)", source, key);
  SEQLAB_CHECK(v->is_number_integer() && v->get<int64_t>() > 0,
               "{}: \"{}\" must be a positive integer, got {}", source, key, v->dump());
  return v->get<int64_t>();
}

bool bool_or(const nlohmann::json& j, const char* key, bool def, const std::string& source) {
  const auto* v = find_key(j, key);
  if (!v) return def;
  SEQLAB_CHECK(v->is_boolean(), "{}: \"{}\" must be true or false, got {}", source, key, v->dump());
  return v->get<bool>();
}

// h.{i}.attn.bias and h.{i}.attn.masked_bias: the causal-mask buffers older transformers saved.
bool is_mask_buffer(const std::string& n) {
  if (n.rfind("h.", 0) != 0) return false;
  size_t i = 2;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) ++i;
  if (i == 2) return false;
  const std::string rest = n.substr(i);
  return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

// The tensors a GPT-2 of config `cfg` holds, in HF names without the prefix.
ShapeList hf_shapes(const ModelConfig& cfg) {
  const int64_t D = cfg.mixer.d_model, I = cfg.mlp_ratio * D;
  ShapeList s = {{"wte.weight", {cfg.vocab_size, D}},
                 {"wpe.weight", {cfg.mixer.max_len, D}},
                 {"ln_f.weight", {D}},
                 {"ln_f.bias", {D}}};
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    s.push_back({p + "ln_1.weight", {D}});
    s.push_back({p + "ln_1.bias", {D}});
    s.push_back({p + "attn.c_attn.weight", {D, 3 * D}});
    s.push_back({p + "attn.c_attn.bias", {3 * D}});
    s.push_back({p + "attn.c_proj.weight", {D, D}});
    s.push_back({p + "attn.c_proj.bias", {D}});
    s.push_back({p + "ln_2.weight", {D}});
    s.push_back({p + "ln_2.bias", {D}});
    s.push_back({p + "mlp.c_fc.weight", {D, I}});
    s.push_back({p + "mlp.c_fc.bias", {I}});
    s.push_back({p + "mlp.c_proj.weight", {I, D}});
    s.push_back({p + "mlp.c_proj.bias", {D}});
  }
  return s;
}

nlohmann::json parse_json_file(const std::string& path) {
  try {
    return parse_json(read_file(path), path);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
}

// The weights of an HF directory: model.safetensors, or the shards a model.safetensors.index.json
// names. Returns the tensors and the name errors should quote.
std::pair<TensorMap, std::string> read_hf_weights(const fs::path& dir) {
  const fs::path single = dir / kWeightsFile, index = dir / kIndexFile;
  if (fs::exists(single)) return {load_safetensors(single.string()).tensors, single.string()};
  if (fs::exists(index)) {
    const auto j = parse_json_file(index.string());
    SEQLAB_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
                 "{}: missing the \"weight_map\" object", index.string());
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      SEQLAB_CHECK(file.is_string(), "{}: weight_map[\"{}\"] must be a file name", index.string(),
                   name);
      const std::string f = file.get<std::string>();
      SEQLAB_CHECK(!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..",
                   "{}: shard '{}' must be a file name in the same directory", index.string(), f);
      shards.insert(f);
    }
    TensorMap all;
    for (const auto& f : shards) {
      auto part = load_safetensors((dir / f).string()).tensors;
      for (auto& [name, t] : part) {
        SEQLAB_CHECK(!all.count(name), "{}: tensor '{}' is in more than one shard", index.string(),
                     name);
        all[name] = std::move(t);
      }
    }
    return {std::move(all), index.string()};
  }
  SEQLAB_CHECK(!fs::exists(dir / "pytorch_model.bin"),
               "{}: has pytorch_model.bin but no model.safetensors; seqlab reads safetensors only "
               "(in Python: model.save_pretrained(dir, safe_serialization=True))",
               dir.string());
  fail("{}: missing (and no {} either)", single.string(), kIndexFile);
}

// out_dir normalised, without a trailing slash (so that "<out>.tmp-..." is its sibling).
fs::path output_path(const std::string& out_dir) {
  SEQLAB_CHECK(!out_dir.empty(), "the output directory must not be empty");
  fs::path p = fs::path(out_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

void check_new_output(const fs::path& out) {
  std::error_code ec;
  const auto st = fs::symlink_status(out, ec);
  if (!fs::exists(st)) return;
  SEQLAB_CHECK(fs::is_directory(st) && fs::is_empty(out, ec),
               "{}: already exists; refusing to overwrite it (choose a new --out)", out.string());
}

// Writes a new directory `out` through `write(staging_dir)`: everything lands in a sibling
// "<out>.tmp-<pid>" that is renamed to `out` at the end, so a failure or a kill never leaves a
// half-written `out`.
void write_new_dir(const std::string& out_dir,
                   const std::function<void(const std::string&)>& write) {
  const fs::path out = output_path(out_dir);
  check_new_output(out);
  if (out.has_parent_path()) ensure_dir(out.parent_path().string());
  const fs::path stage = out.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(stage, ec);
  try {
    ensure_dir(stage.string());
    write(stage.string());
    fs::rename(stage, out, ec);
    SEQLAB_CHECK(!ec, "cannot create {}: {}", out.string(), ec.message());
  } catch (...) {
    fs::remove_all(stage, ec);
    throw;
  }
}

}  // namespace

ModelConfig gpt2_config_from_hf(const nlohmann::json& hf, const std::string& source) {
  SEQLAB_CHECK(hf.is_object(), "{}: expected a JSON object", source);
  const auto* type = find_key(hf, "model_type");
  SEQLAB_CHECK(type, "{}: missing \"model_type\" (not a transformers config?)", source);
  SEQLAB_CHECK(*type == "gpt2", "{}: model_type is {}, expected \"gpt2\"", source, type->dump());
  if (const auto* archs = find_key(hf, "architectures")) {
    SEQLAB_CHECK(archs->is_array(), "{}: \"architectures\" must be a list", source);
    for (const auto& a : *archs)
      SEQLAB_CHECK(a == "GPT2LMHeadModel" || a == "GPT2Model",
                   "{}: architecture {} is not supported (GPT2LMHeadModel or GPT2Model)", source,
                   a.dump());
  }

  ModelConfig c;
  c.mixer.arch = SoftmaxAttentionImpl::kArch;
  c.mixer.causal = true;
  c.mixer.d_model = positive_int(hf, "n_embd", source);
  c.mixer.n_head = positive_int(hf, "n_head", source);
  c.mixer.max_len = positive_int(hf, "n_positions", source);
  c.n_layer = positive_int(hf, "n_layer", source);
  c.vocab_size = positive_int(hf, "vocab_size", source);
  c.pos = "learned";
  c.tie_embeddings = true;
  c.head = "lm";
  const int64_t D = c.mixer.d_model;
  SEQLAB_CHECK(D % c.mixer.n_head == 0, "{}: n_embd {} is not divisible by n_head {}", source, D,
               c.mixer.n_head);

  if (const auto* n_inner = find_key(hf, "n_inner")) {
    SEQLAB_CHECK(n_inner->is_number_integer() && n_inner->get<int64_t>() > 0,
                 "{}: \"n_inner\" must be null or a positive integer, got {}", source,
                 n_inner->dump());
    const int64_t I = n_inner->get<int64_t>();
    SEQLAB_CHECK(I % D == 0,
                 "{}: n_inner {} is not a multiple of n_embd {} (seqlab's MLP width is "
                 "mlp_ratio * d_model)",
                 source, I, D);
    c.mlp_ratio = I / D;
  } else {
    c.mlp_ratio = 4;  // HF: null means 4 * n_embd
  }

  std::string act = "gelu_new";  // HF's default
  if (const auto* a = find_key(hf, "activation_function")) {
    SEQLAB_CHECK(a->is_string(), "{}: \"activation_function\" must be a string, got {}", source,
                 a->dump());
    act = a->get<std::string>();
  }
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.activation = "gelu_tanh";
  else if (act == "gelu")
    c.activation = "gelu";
  else
    fail("{}: activation_function '{}' is not supported (gelu_new, gelu_pytorch_tanh or gelu)",
         source, act);

  if (const auto* eps = find_key(hf, "layer_norm_epsilon")) {
    SEQLAB_CHECK(eps->is_number(), "{}: \"layer_norm_epsilon\" must be a number, got {}", source,
                 eps->dump());
    const double e = eps->get<double>();
    SEQLAB_CHECK(std::abs(e - 1e-5) <= 1e-12,
                 "{}: layer_norm_epsilon is {}, but seqlab's LayerNorms use 1e-5 (LibTorch's "
                 "default); this checkpoint cannot be reproduced exactly",
                 source, eps->dump());
  }
  SEQLAB_CHECK(bool_or(hf, "tie_word_embeddings", true, source),
               "{}: tie_word_embeddings is false; seqlab's GPT-2 import needs the lm head tied to "
               "wte",
               source);
  SEQLAB_CHECK(bool_or(hf, "scale_attn_weights", true, source),
               "{}: scale_attn_weights is false; seqlab's attention always scales by "
               "1/sqrt(d_head)",
               source);
  SEQLAB_CHECK(!bool_or(hf, "scale_attn_by_inverse_layer_idx", false, source),
               "{}: scale_attn_by_inverse_layer_idx is not supported", source);
  SEQLAB_CHECK(!bool_or(hf, "add_cross_attention", false, source),
               "{}: add_cross_attention is not supported (decoder-only GPT-2 only)", source);
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
  return c;
}

nlohmann::json hf_config_from_gpt2(const ModelConfig& cfg) {
  nlohmann::json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", cfg.vocab_size},
      {"n_positions", cfg.mixer.max_len},
      {"n_ctx", cfg.mixer.max_len},  // what transformers before 4.x read instead of n_positions
      {"n_embd", cfg.mixer.d_model},
      {"n_layer", cfg.n_layer},
      {"n_head", cfg.mixer.n_head},
      {"n_inner", cfg.mlp_ratio * cfg.mixer.d_model},
      {"activation_function", cfg.activation == "gelu_tanh" ? "gelu_new" : "gelu"},
      {"layer_norm_epsilon", 1e-5},
      {"tie_word_embeddings", true},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"initializer_range", 0.02},
      {"resid_pdrop", 0.1},
      {"embd_pdrop", 0.1},
      {"attn_pdrop", 0.1},
      {"use_cache", true},
      {"torch_dtype", "float32"},
  };
  if (cfg.vocab_size == kGpt2VocabSize) {
    j["bos_token_id"] = kGpt2VocabSize - 1;  // <|endoftext|>
    j["eos_token_id"] = kGpt2VocabSize - 1;
  }
  return j;
}

void check_gpt2_expressible(const SeqModelImpl& model, const std::string& source) {
  const auto& c = model.config();
  SEQLAB_CHECK(c.mixer.arch == SoftmaxAttentionImpl::kArch,
               "{}: GPT-2 has softmax attention; this model's mixer is '{}'", source, c.mixer.arch);
  SEQLAB_CHECK(c.mixer.causal, "{}: GPT-2 is causal; this model's attention is bidirectional",
               source);
  SEQLAB_CHECK(c.mlp_ratio > 0, "{}: GPT-2 blocks have an MLP; this model has none (mlp_ratio 0)",
               source);
  SEQLAB_CHECK(model.uses_learned_positions(),
               "{}: GPT-2 has learned positions; this model's are '{}'", source, c.pos);
  SEQLAB_CHECK(c.head == "lm", "{}: GPT-2 has an lm head; this model's head is '{}'", source,
               c.head);
  SEQLAB_CHECK(c.tie_embeddings,
               "{}: GPT-2's lm head is tied to wte; this model's is untied (tie_embeddings false)",
               source);
  SEQLAB_CHECK(c.activation == "gelu_tanh" || c.activation == "gelu",
               "{}: activation '{}' has no GPT-2 activation_function", source, c.activation);
}

TensorMap gpt2_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                               const std::string& source) {
  const std::string prefix = kPrefix;
  TensorMap t;  // HF names without the prefix, buffers and lm_head dropped
  torch::Tensor lm_head;
  for (const auto& [name, v] : hf) {
    if (name == "lm_head.weight") {
      lm_head = v;
      continue;
    }
    const std::string n = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
    if (is_mask_buffer(n)) continue;
    SEQLAB_CHECK(!t.count(n), "{}: tensor '{}' appears both with and without the '{}' prefix",
                 source, n, prefix);
    t[n] = v;
  }
  check_tensor_set(t, hf_shapes(cfg), source);
  for (auto& [name, v] : t) {
    SEQLAB_CHECK(v.is_floating_point(), "{}: tensor '{}' has dtype {}, expected a float type",
                 source, name, c10::toString(v.scalar_type()));
    v = v.to(torch::kFloat32);
  }
  if (lm_head.defined()) {
    const auto& wte = t.at("wte.weight");
    SEQLAB_CHECK(lm_head.sizes() == wte.sizes() && lm_head.is_floating_point() &&
                     torch::equal(lm_head.to(torch::kFloat32), wte),
                 "{}: lm_head.weight differs from wte.weight; seqlab's GPT-2 import needs the lm "
                 "head tied to wte",
                 source);
  }

  const int64_t D = cfg.mixer.d_model;
  TensorMap out;
  // Conv1D weights are [in,out]; nn.Linear's are [out,in]: every matrix is transposed.
  auto linear_w = [](const torch::Tensor& w) { return w.t().contiguous(); };
  out["wte.weight"] = t.at("wte.weight");
  out["wpe.weight"] = t.at("wpe.weight");
  out["ln_f.weight"] = t.at("ln_f.weight");
  out["ln_f.bias"] = t.at("ln_f.bias");
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    out[b + "ln1.weight"] = t.at(h + "ln_1.weight");
    out[b + "ln1.bias"] = t.at(h + "ln_1.bias");
    const auto& w_qkv = t.at(h + "attn.c_attn.weight");  // [D,3D]: columns q | k | v
    const auto& b_qkv = t.at(h + "attn.c_attn.bias");    // [3D]
    const char* names[] = {"q", "k", "v"};
    for (int64_t j = 0; j < 3; ++j) {
      out[b + "mixer." + names[j] + ".weight"] = linear_w(w_qkv.narrow(1, j * D, D));   // [D,D]
      out[b + "mixer." + names[j] + ".bias"] = b_qkv.narrow(0, j * D, D).contiguous();  // [D]
    }
    out[b + "mixer.o.weight"] = linear_w(t.at(h + "attn.c_proj.weight"));  // [D,D]
    out[b + "mixer.o.bias"] = t.at(h + "attn.c_proj.bias");
    out[b + "ln2.weight"] = t.at(h + "ln_2.weight");
    out[b + "ln2.bias"] = t.at(h + "ln_2.bias");
    out[b + "mlp.fc1.weight"] = linear_w(t.at(h + "mlp.c_fc.weight"));  // [D,I] -> [I,D]
    out[b + "mlp.fc1.bias"] = t.at(h + "mlp.c_fc.bias");
    out[b + "mlp.fc2.weight"] = linear_w(t.at(h + "mlp.c_proj.weight"));  // [I,D] -> [D,I]
    out[b + "mlp.fc2.bias"] = t.at(h + "mlp.c_proj.bias");
  }
  return out;
}

TensorMap hf_tensors_from_gpt2(SeqModelImpl& model) {
  torch::NoGradGuard ng;
  const auto& cfg = model.config();
  auto t = model_tensors(model);
  auto get = [&](const std::string& n) { return t.at(n).detach().to(torch::kFloat32); };
  auto conv_w = [](const torch::Tensor& w) { return w.t().contiguous(); };  // [out,in] -> [in,out]
  const std::string p = kPrefix;
  TensorMap out;
  out[p + "wte.weight"] = get("wte.weight").contiguous();
  out[p + "wpe.weight"] = get("wpe.weight").contiguous();
  out[p + "ln_f.weight"] = get("ln_f.weight").contiguous();
  out[p + "ln_f.bias"] = get("ln_f.bias").contiguous();
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".",
                      b = "blocks." + std::to_string(i) + ".";
    out[h + "ln_1.weight"] = get(b + "ln1.weight").contiguous();
    out[h + "ln_1.bias"] = get(b + "ln1.bias").contiguous();
    out[h + "attn.c_attn.weight"] =
        torch::cat({conv_w(get(b + "mixer.q.weight")), conv_w(get(b + "mixer.k.weight")),
                    conv_w(get(b + "mixer.v.weight"))},
                   1);  // 3 x [D,D] -> [D,3D]
    out[h + "attn.c_attn.bias"] = torch::cat(
        {get(b + "mixer.q.bias"), get(b + "mixer.k.bias"), get(b + "mixer.v.bias")});  // [3D]
    out[h + "attn.c_proj.weight"] = conv_w(get(b + "mixer.o.weight"));                 // [D,D]
    out[h + "attn.c_proj.bias"] = get(b + "mixer.o.bias").contiguous();
    out[h + "ln_2.weight"] = get(b + "ln2.weight").contiguous();
    out[h + "ln_2.bias"] = get(b + "ln2.bias").contiguous();
    out[h + "mlp.c_fc.weight"] = conv_w(get(b + "mlp.fc1.weight"));  // [I,D] -> [D,I]
    out[h + "mlp.c_fc.bias"] = get(b + "mlp.fc1.bias").contiguous();
    out[h + "mlp.c_proj.weight"] = conv_w(get(b + "mlp.fc2.weight"));  // [D,I] -> [I,D]
    out[h + "mlp.c_proj.bias"] = get(b + "mlp.fc2.bias").contiguous();
  }
  return out;
}

LoadedModel read_hf_gpt2(const std::string& hf_dir) {
  SEQLAB_CHECK(fs::is_directory(hf_dir), "{}: not a directory (expected an HF GPT-2 directory)",
               hf_dir);
  const fs::path dir(hf_dir);
  const std::string cfg_path = (dir / kConfigFile).string();
  SEQLAB_CHECK(fs::exists(cfg_path), "{}: missing (not an HF model directory?)", cfg_path);
  const auto hf = parse_json_file(cfg_path);

  LoadedModel out;
  out.config = gpt2_config_from_hf(hf, cfg_path);
  auto [tensors, weights_name] = read_hf_weights(dir);
  auto mapped = gpt2_tensors_from_hf(tensors, out.config, weights_name);
  tensors.clear();  // the HF copies are no longer needed: GPT-2 XL is 6 GB in F32
  out.model = SeqModel(out.config);
  load_model_tensors(*out.model, mapped, weights_name);
  out.model->eval();

  out.sections = nlohmann::json::object();
  // Provenance: where the weights came from and the HF config as read.
  out.sections["hf"] = {{"from", fs::absolute(dir).lexically_normal().string()}, {"config", hf}};
  if (out.config.vocab_size == kGpt2VocabSize) {
    // GPT-2's own vocabulary: a language model over its BPE tokens.
    TaskConfig task;
    task.task = "lm";
    task.tokenizer = "gpt2";
    task.max_len = out.config.mixer.max_len;
    out.sections["task"] = task.to_json();
  }
  return out;
}

void write_hf_gpt2(const std::string& out_dir, SeqModelImpl& model, const std::string& source) {
  check_gpt2_expressible(model, source);
  ensure_dir(out_dir);
  // Weights first, config last (as in a seqlab model directory).
  save_safetensors((fs::path(out_dir) / kWeightsFile).string(), hf_tensors_from_gpt2(model),
                   {{"format", "pt"}});
  write_file_atomic((fs::path(out_dir) / kConfigFile).string(),
                    hf_config_from_gpt2(model.config()).dump(2) + "\n");
}

LoadedModel import_hf_gpt2(const std::string& hf_dir, const std::string& out_dir) {
  check_new_output(output_path(out_dir));
  auto lm = read_hf_gpt2(hf_dir);
  write_new_dir(out_dir, [&](const std::string& d) { save_model_dir(d, *lm.model, lm.sections); });
  return lm;
}

LoadedModel export_hf_gpt2(const std::string& model_dir, const std::string& out_dir) {
  check_new_output(output_path(out_dir));
  auto lm = load_model_dir(model_dir);
  check_gpt2_expressible(*lm.model, model_dir);
  write_new_dir(out_dir, [&](const std::string& d) { write_hf_gpt2(d, *lm.model, model_dir); });
  return lm;
}

}  // namespace seqlab
