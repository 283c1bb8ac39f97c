#include "seqlab/model/hf_import.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/core/log.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/model/hf_gpt2.h"
#include "seqlab/model/hf_llama.h"
#include "seqlab/model/hf_neox.h"
#include "seqlab/tasks/task.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <set>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

nlohmann::json parse_json_text(std::string_view text, const std::string& path) {
  try {
    return parse_json(text, path);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    fail("{}: not valid JSON ({})", path, msg);
  }
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The last dot-separated component of a tensor name.
std::string last_component(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// GPTQ / AWQ (qweight, qzeros, scales, g_idx) and bitsandbytes (absmax, quant_map, SCB,
// quant_state.*) tensors.
bool is_quantized_tensor(const std::string& name) {
  static const std::set<std::string> kNames = {"qweight", "qzeros",    "scales", "g_idx",
                                               "absmax",  "quant_map", "SCB",    "weight_format"};
  return kNames.count(last_component(name)) || name.find(".quant_state.") != std::string::npos;
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> kTypes = {"gpt2", "llama", "mistral", "qwen2", "gpt_neox"};
  return kTypes;
}

nlohmann::json parse_hf_config(std::string_view text, const std::string& path) {
  auto hf = parse_json_text(text, path);
  SEQLAB_CHECK(hf.is_object(), "{}: expected a JSON object", path);
  const auto* type = hf_find(hf, "model_type");
  SEQLAB_CHECK(type, "{}: missing \"model_type\" (not a transformers config?)", path);
  const auto& types = hf_model_types();
  SEQLAB_CHECK(type->is_string() &&
                   std::find(types.begin(), types.end(), type->get<std::string>()) != types.end(),
               "{}: model_type {} is not supported (supported: {})", path,
               type->is_string() ? "'" + type->get<std::string>() + "'" : json_for_message(*type),
               fmt::join(types, ", "));
  if (const auto* q = hf_find(hf, "quantization_config")) {
    std::string method = "unknown";
    if (q->is_object())
      if (const auto* m = hf_find(*q, "quant_method"); m && m->is_string())
        method = m->get<std::string>();
    fail(
        "{}: quantization_config (quant_method '{}') is not supported: seqlab imports F32, F16 "
        "and BF16 checkpoints only (use the unquantized model)",
        path, method);
  }
  return hf;
}

std::map<std::string, std::string> parse_hf_shard_index(std::string_view text,
                                                        const std::string& path) {
  const auto j = parse_json_text(text, path);
  SEQLAB_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
               "{}: missing the \"weight_map\" object", path);
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j["weight_map"].items()) {
    SEQLAB_CHECK(file.is_string(), "{}: weight_map[{}] must be a file name, got {}", path,
                 json_for_message(nlohmann::json(name)), json_for_message(file));
    const std::string f = file.get<std::string>();
    SEQLAB_CHECK(!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..",
                 "{}: shard {} must be a file name in the same directory", path,
                 json_for_message(file));
    map[name] = f;
  }
  return map;
}

HfWeights read_hf_weights(const std::string& hf_dir) {
  const fs::path dir(hf_dir), single = dir / kWeightsFile, index = dir / kHfIndexFile;
  if (fs::exists(single)) return {load_safetensors(single.string()).tensors, single.string()};
  if (fs::exists(index)) {
    const std::string index_name = index.string();
    const auto map = parse_hf_shard_index(read_file(index_name), index_name);
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, file] : map) by_shard[file].push_back(name);
    for (const auto& [file, names] : by_shard)
      SEQLAB_CHECK(fs::is_regular_file(dir / file), "{}: shard '{}' is missing ({} does not exist)",
                   index_name, file, (dir / file).string());
    TensorMap all;
    for (const auto& [file, names] : by_shard) {
      auto part = load_safetensors((dir / file).string()).tensors;
      for (const auto& n : names)
        SEQLAB_CHECK(part.count(n), "{}: tensor '{}' is listed in shard '{}', which lacks it",
                     index_name, n, file);
      for (auto& [name, t] : part) {
        SEQLAB_CHECK(!all.count(name), "{}: tensor '{}' is in more than one shard", index_name,
                     name);
        all[name] = std::move(t);
      }
    }
    return {std::move(all), index_name};
  }
  SEQLAB_CHECK(!fs::exists(dir / "pytorch_model.bin"),
               "{}: has pytorch_model.bin but no model.safetensors; seqlab reads safetensors only "
               "(in Python: model.save_pretrained(dir, safe_serialization=True))",
               dir.string());
  fail("{}: missing (and no {} either)", single.string(), kHfIndexFile);
}

TensorMap hf_float_tensors(const TensorMap& hf,
                           const std::function<bool(const std::string&)>& is_buffer,
                           const std::string& source) {
  TensorMap out;
  for (const auto& [name, t] : hf) {
    if (is_buffer(name)) continue;
    SEQLAB_CHECK(!is_quantized_tensor(name),
                 "{}: tensor '{}' is a quantized weight (GPTQ/AWQ/bitsandbytes); seqlab imports "
                 "F32, F16 and BF16 checkpoints only (use the unquantized model)",
                 source, name);
    SEQLAB_CHECK(t.is_floating_point(),
                 "{}: tensor '{}' has dtype {}, expected F32, F16 or BF16 (a quantized "
                 "checkpoint?)",
                 source, name, c10::toString(t.scalar_type()));
    out[name] = t.to(torch::kFloat32);
  }
  return out;
}

bool hf_is_rotary_buffer(const std::string& name) {
  return name == "rotary_emb.inv_freq" || ends_with(name, ".rotary_emb.inv_freq");
}

void hf_take_tied_head(TensorMap& t, const std::string& head, const std::string& embed,
                       const std::string& source) {
  auto it = t.find(head);
  if (it == t.end()) return;
  auto e = t.find(embed);
  SEQLAB_CHECK(e != t.end() && it->second.sizes() == e->second.sizes() &&
                   torch::equal(it->second, e->second),
               "{}: {} differs from {}, but the config ties them (tie_word_embeddings)", source,
               head, embed);
  t.erase(it);
}

void hf_rename_in(const TensorMap& t, const std::vector<HfName>& names, const ShapeList& more,
                  TensorMap& out, const std::string& source) {
  ShapeList expected = more;
  for (const auto& n : names) expected.emplace_back(n.hf, n.shape);
  check_tensor_set(t, expected, source);
  for (const auto& n : names) out[n.seqlab] = t.at(n.hf);
}

TensorMap hf_rename_out(const TensorMap& model_tensors, const std::vector<HfName>& names) {
  TensorMap out;
  for (const auto& n : names)
    out[n.hf] = model_tensors.at(n.seqlab).detach().to(torch::kFloat32).contiguous();
  return out;
}

// ---- dispatch ----------------------------------------------------------------------------------

namespace {

struct Family {
  const char* model_type;
  const char* name;
  ModelConfig (*config)(const nlohmann::json&, const std::string&, std::vector<std::string>*);
  TensorMap (*tensors)(const TensorMap&, const ModelConfig&, const std::string&);
};

const Family kFamilies[] = {
    {"gpt2", "GPT-2",
     [](const nlohmann::json& hf, const std::string& s, std::vector<std::string>*) {
       return gpt2_config_from_hf(hf, s);
     },
     gpt2_tensors_from_hf},
    {"llama", "Llama", llama_config_from_hf, llama_tensors_from_hf},
    {"mistral", "Mistral", llama_config_from_hf, llama_tensors_from_hf},
    {"qwen2", "Qwen2", llama_config_from_hf, llama_tensors_from_hf},
    {"gpt_neox", "GPT-NeoX", neox_config_from_hf, neox_tensors_from_hf},
};

const Family& family_of(const nlohmann::json& hf, const std::string& source) {
  const auto* type = hf_find(hf, "model_type");
  for (const auto& f : kFamilies)
    if (type && type->is_string() && *type == f.model_type) return f;
  // parse_hf_config refuses these first; a caller that skipped it gets the same message.
  fail("{}: model_type {} is not supported (supported: {})", source,
       type ? json_for_message(*type) : "(missing)", fmt::join(hf_model_types(), ", "));
}

// Every family is a causal softmax-attention LM without seqlab-only extras.
void check_exportable(const SeqModelImpl& model, const std::string& source) {
  const auto& c = model.config();
  SEQLAB_CHECK(c.mixer.arch == SoftmaxAttentionImpl::kArch,
               "{}: Hugging Face export needs softmax attention (GPT-2, Llama, Qwen2, GPT-NeoX); "
               "this model's mixer is '{}'",
               source, c.mixer.arch);
  SEQLAB_CHECK(c.mixer.causal,
               "{}: the Hugging Face families are causal; this model's attention is "
               "bidirectional",
               source);
  SEQLAB_CHECK(c.head == "lm",
               "{}: the Hugging Face families have an lm head; this model's head "
               "is '{}'",
               source, c.head);
  SEQLAB_CHECK(!c.mixer.mae, "{}: mixture of attentive experts (--mae) has no Hugging Face family",
               source);
  SEQLAB_CHECK(!c.deq.enabled, "{}: a DEQ model (--deq) has no Hugging Face family", source);
  SEQLAB_CHECK(c.mlp_width() > 0,
               "{}: the Hugging Face families have an MLP in every block; this model has none "
               "(mlp_ratio 0)",
               source);
}

}  // namespace

ModelConfig model_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                 std::vector<std::string>* notes) {
  SEQLAB_CHECK(hf.is_object(), "{}: expected a JSON object", source);
  return family_of(hf, source).config(hf, source, notes);
}

std::string hf_family_name(const std::string& model_type) {
  for (const auto& f : kFamilies)
    if (model_type == f.model_type) return f.name;
  return model_type;
}

std::string hf_export_type(const SeqModelImpl& model, const std::string& source) {
  check_exportable(model, source);
  const auto& c = model.config();
  const bool rope = c.mixer.rope, learned = model.uses_learned_positions();
  if (rope && c.norm == "rms" && c.mlp == "swiglu") {
    check_llama_expressible(model, source);
    return llama_export_type(c);
  }
  if (rope && c.norm == "layer" && c.mlp == "plain") {
    check_neox_expressible(model, source);
    return "gpt_neox";
  }
  if (!rope && learned && c.norm == "layer" && c.mlp == "plain") {
    check_gpt2_expressible(model, source);
    return "gpt2";
  }
  fail(
      "{}: no Hugging Face family expresses this model (positions '{}', rope {}, norm '{}', "
      "mlp '{}'): GPT-2 needs learned positions, LayerNorm and a plain MLP; Llama/Qwen2 RoPE, "
      "RMSNorm and SwiGLU; GPT-NeoX RoPE, LayerNorm and a plain MLP",
      source, c.resolved_pos(true), rope, c.norm, c.mlp);
}

LoadedModel read_hf(const std::string& hf_dir, std::vector<std::string>* notes,
                    int64_t max_context) {
  SEQLAB_CHECK(fs::is_directory(hf_dir),
               "{}: not a directory (expected a Hugging Face model "
               "directory)",
               hf_dir);
  const fs::path dir(hf_dir);
  const std::string cfg_path = (dir / kConfigFile).string();
  SEQLAB_CHECK(fs::exists(cfg_path), "{}: missing (not a Hugging Face model directory?)", cfg_path);
  const auto hf = parse_hf_config(read_file(cfg_path), cfg_path);
  const Family& family = family_of(hf, cfg_path);

  LoadedModel out;
  out.config = family.config(hf, cfg_path, notes);
  SEQLAB_CHECK(max_context >= 0, "--max-context must be >= 0 (0 = the checkpoint's), got {}",
               max_context);
  if (max_context > 0 && max_context < out.config.mixer.max_len) {
    SEQLAB_CHECK(out.config.mixer.rope,
                 "--max-context {}: {}'s learned positions fix its context at {} (n_positions)",
                 max_context, family.name, out.config.mixer.max_len);
    if (notes)
      notes->push_back(fmt::format("max_context {} (--max-context; the checkpoint has {})",
                                   max_context, out.config.mixer.max_len));
    out.config.mixer.max_len = max_context;
  }
  auto weights = read_hf_weights(hf_dir);
  auto mapped = family.tensors(weights.tensors, out.config, weights.source);
  weights.tensors.clear();  // the file's copies are no longer needed
  out.model = SeqModel(out.config);
  load_model_tensors(*out.model, mapped, weights.source);
  out.model->eval();

  out.sections = nlohmann::json::object();
  // Provenance: where the weights came from and the HF config as read.
  out.sections["hf"] = {{"from", fs::absolute(dir).lexically_normal().string()}, {"config", hf}};
  TaskConfig task;
  task.task = "lm";
  task.max_len = out.config.mixer.max_len;
  if (out.config.vocab_size == kGpt2VocabSize && family.model_type == std::string("gpt2")) {
    task.tokenizer = "gpt2";  // GPT-2's own BPE, built into seqlab
    out.sections["task"] = task.to_json();
  } else if (fs::exists(dir / kHfTokenizerFiles[0])) {
    task.tokenizer = "hf";  // the model directory's own tokenizer.json (copied by import_hf)
    out.sections["task"] = task.to_json();
  }
  return out;
}

void write_hf(const std::string& out_dir, SeqModelImpl& model, const std::string& model_type,
              const nlohmann::json& extra) {
  TensorMap tensors;
  nlohmann::json config;
  if (model_type == "gpt2") {
    tensors = hf_tensors_from_gpt2(model);
    config = hf_config_from_gpt2(model.config());
  } else if (model_type == "gpt_neox") {
    tensors = hf_tensors_from_neox(model);
    config = hf_config_from_neox(model.config());
  } else {
    tensors = hf_tensors_from_llama(model);
    config = hf_config_from_llama(model.config());
  }
  for (const auto& [key, value] : extra.items()) config[key] = value;
  ensure_dir(out_dir);
  // Weights first, config last (as in a seqlab model directory).
  save_safetensors((fs::path(out_dir) / kWeightsFile).string(), tensors, {{"format", "pt"}});
  write_file_atomic((fs::path(out_dir) / kConfigFile).string(), config.dump(2) + "\n");
}

HfConversion import_hf(const std::string& hf_dir, const std::string& out_dir, int64_t max_context) {
  check_new_output_dir(out_dir);
  std::vector<std::string> notes;
  HfConversion r;
  r.model = read_hf(hf_dir, &notes, max_context);
  r.model_type = r.model.sections["hf"]["config"]["model_type"].get<std::string>();
  for (const auto& n : notes) log_info("import-hf: {}", n);
  write_new_dir(out_dir, [&](const std::string& d) {
    save_model_dir(d, *r.model.model, r.model.sections);
    copy_hf_tokenizer(hf_dir, d);
  });
  return r;
}

HfConversion export_hf(const std::string& model_dir, const std::string& out_dir) {
  check_new_output_dir(out_dir);
  HfConversion r;
  r.model = load_model_dir(model_dir);
  // Merged and unmerged adapters compute the same function; HF has no place for them.
  if (r.model.model->adapters) r.model.model->merge_adapters();
  r.model_type = hf_export_type(*r.model.model, model_dir);
  // The special tokens' ids belong to the vocabulary, which import and export keep.
  nlohmann::json extra = nlohmann::json::object();
  const auto& s = r.model.sections;
  if (s.contains("hf") && s["hf"].is_object() && s["hf"].contains("config") &&
      s["hf"]["config"].is_object())
    for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"})
      if (const auto* v = hf_find(s["hf"]["config"], key)) extra[key] = *v;
  write_new_dir(out_dir, [&](const std::string& d) {
    write_hf(d, *r.model.model, r.model_type, extra);
    copy_hf_tokenizer(model_dir, d);
  });
  return r;
}

// ---- directories -------------------------------------------------------------------------------

namespace {

// out_dir normalised, without a trailing slash (so that "<out>.tmp-..." is its sibling).
fs::path output_path(const std::string& out_dir) {
  SEQLAB_CHECK(!out_dir.empty(), "the output directory must not be empty");
  fs::path p = fs::path(out_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

}  // namespace

void check_new_output_dir(const std::string& out_dir) {
  const fs::path out = output_path(out_dir);
  std::error_code ec;
  const auto st = fs::symlink_status(out, ec);
  if (!fs::exists(st)) return;
  SEQLAB_CHECK(fs::is_directory(st) && fs::is_empty(out, ec),
               "{}: already exists; refusing to overwrite it (choose a new --out)", out.string());
}

void write_new_dir(const std::string& out_dir,
                   const std::function<void(const std::string&)>& write) {
  const fs::path out = output_path(out_dir);
  check_new_output_dir(out.string());
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

bool copy_hf_tokenizer(const std::string& from_dir, const std::string& to_dir) {
  bool tokenizer = false;
  for (const char* name : kHfTokenizerFiles) {
    const fs::path src = fs::path(from_dir) / name;
    if (!fs::is_regular_file(src)) continue;
    write_file_atomic((fs::path(to_dir) / name).string(), read_file(src.string()));
    tokenizer = tokenizer || name == std::string(kHfTokenizerFiles[0]);
  }
  return tokenizer;
}

}  // namespace seqlab
