#include "seqlab/model/hf_gpt2.h"

#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"

#include <cctype>

namespace seqlab {

namespace {

const char* kPrefix = "transformer.";

// h.{i}.attn.bias and h.{i}.attn.masked_bias: the causal-mask buffers older transformers saved.
bool is_mask_buffer(const std::string& n) {
  if (n.rfind("h.", 0) != 0) return false;
  size_t i = 2;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) ++i;
  if (i == 2) return false;
  const std::string rest = n.substr(i);
  return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

bool is_gpt2_buffer(const std::string& name) {
  const std::string prefix = kPrefix;
  return is_mask_buffer(name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name);
}

// The tensors a GPT-2 of config `cfg` holds, in HF names without the prefix.
ShapeList hf_shapes(const ModelConfig& cfg) {
  const int64_t D = cfg.mixer.d_model, I = cfg.mlp_width();
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

}  // namespace

ModelConfig gpt2_config_from_hf(const nlohmann::json& hf, const std::string& source) {
  SEQLAB_CHECK(hf.is_object(), "{}: expected a JSON object", source);
  const auto* type = hf_find(hf, "model_type");
  SEQLAB_CHECK(type, "{}: missing \"model_type\" (not a transformers config?)", source);
  SEQLAB_CHECK(*type == "gpt2", "{}: model_type is {}, expected \"gpt2\"", source,
               json_for_message(*type));
  hf_check_architectures(hf, {"GPT2LMHeadModel", "GPT2Model"}, source);

  ModelConfig c;
  c.mixer.arch = SoftmaxAttentionImpl::kArch;
  c.mixer.causal = true;
  c.mixer.d_model = hf_positive_int(hf, "n_embd", source);
  c.mixer.n_head = hf_positive_int(hf, "n_head", source);
  c.mixer.max_len = hf_positive_int(hf, "n_positions", source);
  c.n_layer = hf_positive_int(hf, "n_layer", source);
  c.vocab_size = hf_positive_int(hf, "vocab_size", source);
  c.pos = "learned";
  c.norm = "layer";
  c.mlp = "plain";
  c.tie_embeddings = true;
  c.head = "lm";
  const int64_t D = c.mixer.d_model;
  SEQLAB_CHECK(D % c.mixer.n_head == 0, "{}: n_embd {} is not divisible by n_head {}", source, D,
               c.mixer.n_head);
  // HF: n_inner null means 4 * n_embd.
  hf_set_mlp_width(c, hf_find(hf, "n_inner") ? hf_positive_int(hf, "n_inner", source) : 4 * D);

  const std::string act = hf_string_or(hf, "activation_function", "gelu_new", source);
  if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.activation = "gelu_tanh";
  else if (act == "gelu")
    c.activation = "gelu";
  else
    fail("{}: activation_function '{}' is not supported (gelu_new, gelu_pytorch_tanh or gelu)",
         source, act);
  c.norm_eps = hf_number_or(hf, "layer_norm_epsilon", 1e-5, source);
  SEQLAB_CHECK(hf_bool_or(hf, "tie_word_embeddings", true, source),
               "{}: tie_word_embeddings is false; seqlab's GPT-2 import needs the lm head tied to "
               "wte",
               source);
  SEQLAB_CHECK(hf_bool_or(hf, "scale_attn_weights", true, source),
               "{}: scale_attn_weights is false; seqlab's attention always scales by "
               "1/sqrt(d_head)",
               source);
  SEQLAB_CHECK(!hf_bool_or(hf, "scale_attn_by_inverse_layer_idx", false, source),
               "{}: scale_attn_by_inverse_layer_idx is not supported", source);
  SEQLAB_CHECK(!hf_bool_or(hf, "add_cross_attention", false, source),
               "{}: add_cross_attention is not supported (decoder-only GPT-2 only)", source);
  hf_validate(c, source);
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
      {"n_inner", cfg.mlp_width()},
      {"activation_function", cfg.activation == "gelu_tanh" ? "gelu_new" : "gelu"},
      {"layer_norm_epsilon", cfg.norm_eps},
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
  const auto& m = c.mixer;
  SEQLAB_CHECK(m.arch == SoftmaxAttentionImpl::kArch,
               "{}: GPT-2 has softmax attention; this model's mixer is '{}'", source, m.arch);
  SEQLAB_CHECK(m.causal, "{}: GPT-2 is causal; this model's attention is bidirectional", source);
  SEQLAB_CHECK(c.mlp_width() > 0, "{}: GPT-2 blocks have an MLP; this model has none (mlp_ratio 0)",
               source);
  SEQLAB_CHECK(model.uses_learned_positions(),
               "{}: GPT-2 has learned positions; this model's are '{}'", source,
               c.resolved_pos(true));
  SEQLAB_CHECK(!m.rope, "{}: GPT-2 has no rotary positions; this model has --rope", source);
  SEQLAB_CHECK(c.head == "lm", "{}: GPT-2 has an lm head; this model's head is '{}'", source,
               c.head);
  SEQLAB_CHECK(c.tie_embeddings,
               "{}: GPT-2's lm head is tied to wte; this model's is untied (tie_embeddings false)",
               source);
  SEQLAB_CHECK(c.norm == "layer", "{}: GPT-2 has LayerNorm; this model's norm is '{}'", source,
               c.norm);
  SEQLAB_CHECK(c.mlp == "plain", "{}: GPT-2 has a plain MLP; this model's is '{}'", source, c.mlp);
  SEQLAB_CHECK(c.activation == "gelu_tanh" || c.activation == "gelu",
               "{}: activation '{}' has no GPT-2 activation_function", source, c.activation);
  SEQLAB_CHECK(m.kv_heads() == m.n_head,
               "{}: GPT-2 has no grouped-query attention; this model has {} kv heads for {} heads",
               source, m.kv_heads(), m.n_head);
  SEQLAB_CHECK(m.qkv_bias && m.o_bias && c.mlp_bias,
               "{}: GPT-2 has biases on every projection; this model has qkv_bias {}, o_bias {}, "
               "mlp_bias {}",
               source, m.qkv_bias, m.o_bias, c.mlp_bias);
  SEQLAB_CHECK(!c.parallel_residual,
               "{}: GPT-2 blocks are sequential; this model has a parallel residual", source);
  SEQLAB_CHECK(!m.mae && !c.deq.enabled, "{}: GPT-2 has plain blocks; this model uses {}", source,
               m.mae ? "--mae" : "--deq");
}

TensorMap gpt2_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                               const std::string& source) {
  const std::string prefix = kPrefix;
  TensorMap t;  // HF names without the prefix, buffers and lm_head dropped
  torch::Tensor lm_head;
  for (auto& [name, v] : hf_float_tensors(hf, is_gpt2_buffer, source)) {
    if (name == "lm_head.weight") {
      lm_head = v;
      continue;
    }
    const std::string n = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
    SEQLAB_CHECK(!t.count(n), "{}: tensor '{}' appears both with and without the '{}' prefix",
                 source, n, prefix);
    t[n] = v;
  }
  check_tensor_set(t, hf_shapes(cfg), source);
  if (lm_head.defined()) {
    const auto& wte = t.at("wte.weight");
    SEQLAB_CHECK(lm_head.sizes() == wte.sizes() && torch::equal(lm_head, wte),
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

}  // namespace seqlab
