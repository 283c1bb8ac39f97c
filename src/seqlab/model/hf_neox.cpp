#include "seqlab/model/hf_neox.h"

#include "seqlab/core/error.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"

namespace seqlab {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The buffers transformers saved with GPT-NeoX: the causal mask, masked_bias and inv_freq.
bool is_neox_buffer(const std::string& n) {
  return ends_with(n, ".attention.bias") || ends_with(n, ".attention.masked_bias") ||
         hf_is_rotary_buffer(n);
}

std::string layer(int64_t i) {
  return "gpt_neox.layers." + std::to_string(i) + ".";
}

// Every tensor but the packed query_key_value: one-to-one renames.
std::vector<HfName> neox_names(const ModelConfig& c) {
  const int64_t D = c.mixer.d_model, V = c.vocab_size, I = c.mlp_width();
  std::vector<HfName> n = {{"gpt_neox.embed_in.weight", "wte.weight", {V, D}}};
  if (!c.tie_embeddings) n.push_back({"embed_out.weight", "head.weight", {V, D}});
  auto add = [&](const std::string& hf, const std::string& sl, std::vector<int64_t> w, bool bias) {
    n.push_back({hf + ".weight", sl + ".weight", w});
    if (bias) n.push_back({hf + ".bias", sl + ".bias", {w[0]}});
  };
  add("gpt_neox.final_layer_norm", "ln_f", {D}, true);
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = layer(i), b = "blocks." + std::to_string(i) + ".";
    add(h + "input_layernorm", b + "ln1", {D}, true);
    add(h + "post_attention_layernorm", b + "ln2", {D}, true);
    add(h + "attention.dense", b + "mixer.o", {D, D}, c.mixer.o_bias);
    add(h + "mlp.dense_h_to_4h", b + "mlp.fc1", {I, D}, true);
    add(h + "mlp.dense_4h_to_h", b + "mlp.fc2", {D, I}, true);
  }
  return n;
}

// The packed projections' HF names and shapes.
ShapeList packed_shapes(const ModelConfig& c) {
  const int64_t D = c.mixer.d_model;
  ShapeList s;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    s.push_back({layer(i) + "attention.query_key_value.weight", {3 * D, D}});
    if (c.mixer.qkv_bias) s.push_back({layer(i) + "attention.query_key_value.bias", {3 * D}});
  }
  return s;
}

// A value given under two names (old and new transformers): either, or both if they agree.
double one_of(const nlohmann::json& hf, const char* a, const char* b, double def,
              const std::string& source) {
  const bool has_a = hf_find(hf, a) != nullptr, has_b = hf_find(hf, b) != nullptr;
  const double va = hf_number_or(hf, a, def, source), vb = hf_number_or(hf, b, def, source);
  SEQLAB_CHECK(!(has_a && has_b) || va == vb, "{}: {} {} and {} {} disagree", source, a, va, b, vb);
  return has_a ? va : vb;
}

}  // namespace

ModelConfig neox_config_from_hf(const nlohmann::json& hf, const std::string& source,
                                std::vector<std::string>*) {
  hf_check_architectures(hf, {"GPTNeoXForCausalLM"}, source);
  ModelConfig c = hf_rope_config(hf, source);
  const std::string act = hf_string_or(hf, "hidden_act", "gelu", source);
  if (act == "gelu")
    c.activation = "gelu";
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.activation = "gelu_tanh";
  else
    fail("{}: hidden_act '{}' is not supported (gelu, gelu_new or gelu_pytorch_tanh)", source, act);
  hf_check_rope_scaling(hf, source);
  const double pct = one_of(hf, "rotary_pct", "partial_rotary_factor", 0.25, source);
  const double base = one_of(hf, "rotary_emb_base", "rope_theta", 10000.0, source);
  SEQLAB_CHECK(pct > 0 && pct <= 1, "{}: rotary_pct must be in (0, 1], got {}", source, pct);
  const int64_t Dh = c.mixer.d_head(), R = static_cast<int64_t>(static_cast<double>(Dh) * pct);
  SEQLAB_CHECK(R >= 2 && R % 2 == 0,
               "{}: rotary_pct {} of head size {} rotates {} dims; seqlab (like transformers) "
               "needs an even number >= 2",
               source, pct, Dh, R);

  c.mixer.rope_theta = base;
  c.mixer.rope_fraction = pct;
  c.mixer.qkv_bias = c.mixer.o_bias = hf_bool_or(hf, "attention_bias", true, source);
  c.mlp = "plain";
  c.mlp_bias = true;
  c.norm = "layer";
  c.norm_eps = hf_number_or(hf, "layer_norm_eps", 1e-5, source);
  c.parallel_residual = hf_bool_or(hf, "use_parallel_residual", true, source);
  hf_validate(c, source);
  return c;
}

TensorMap neox_tensors_from_hf(const TensorMap& hf, const ModelConfig& cfg,
                               const std::string& source) {
  auto t = hf_float_tensors(hf, is_neox_buffer, source);
  if (cfg.tie_embeddings)
    hf_take_tied_head(t, "embed_out.weight", "gpt_neox.embed_in.weight", source);
  TensorMap out;
  hf_rename_in(t, neox_names(cfg), packed_shapes(cfg), out, source);
  const int64_t D = cfg.mixer.d_model, H = cfg.mixer.n_head, Dh = cfg.mixer.d_head();
  const char* names[] = {"q", "k", "v"};
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string h = layer(i) + "attention.query_key_value.",
                      b = "blocks." + std::to_string(i) + ".mixer.";
    const auto w = t.at(h + "weight").view({H, 3, Dh, D});
    for (int64_t j = 0; j < 3; ++j)
      out[b + names[j] + ".weight"] = w.select(1, j).reshape({D, D}).contiguous();
    if (!cfg.mixer.qkv_bias) continue;
    const auto bias = t.at(h + "bias").view({H, 3, Dh});
    for (int64_t j = 0; j < 3; ++j)
      out[b + names[j] + ".bias"] = bias.select(1, j).reshape({D}).contiguous();
  }
  return out;
}

void check_neox_expressible(const SeqModelImpl& model, const std::string& source) {
  const auto& c = model.config();
  SEQLAB_CHECK(c.mixer.rope && c.norm == "layer" && c.mlp == "plain",
               "{}: GPT-NeoX needs RoPE, LayerNorm and a plain MLP", source);
  SEQLAB_CHECK(!model.uses_learned_positions() && c.resolved_pos(true) == "none",
               "{}: GPT-NeoX's positions are rotary only; this model also adds '{}' positions",
               source, c.resolved_pos(true));
  SEQLAB_CHECK(c.mixer.kv_heads() == c.mixer.n_head,
               "{}: GPT-NeoX has no grouped-query attention; this model has {} kv heads for {} "
               "heads",
               source, c.mixer.kv_heads(), c.mixer.n_head);
  SEQLAB_CHECK(c.mixer.qkv_bias == c.mixer.o_bias,
               "{}: GPT-NeoX's attention_bias covers q/k/v and the output together; this model "
               "has q/k/v bias {} and o bias {}",
               source, c.mixer.qkv_bias, c.mixer.o_bias);
  SEQLAB_CHECK(c.mlp_bias, "{}: GPT-NeoX's MLP has biases; this model's has none (mlp_bias false)",
               source);
  const auto R =
      static_cast<int64_t>(static_cast<double>(c.mixer.d_head()) * c.mixer.rope_fraction);
  SEQLAB_CHECK(R == c.mixer.rope_dims(),
               "{}: rope_fraction {} of head size {} gives {} rotary dims, odd; GPT-NeoX's "
               "rotary_pct needs an even count",
               source, c.mixer.rope_fraction, c.mixer.d_head(), R);
}

nlohmann::json hf_config_from_neox(const ModelConfig& cfg) {
  return {
      {"architectures", {"GPTNeoXForCausalLM"}},
      {"model_type", "gpt_neox"},
      {"vocab_size", cfg.vocab_size},
      {"hidden_size", cfg.mixer.d_model},
      {"num_hidden_layers", cfg.n_layer},
      {"num_attention_heads", cfg.mixer.n_head},
      {"intermediate_size", cfg.mlp_width()},
      {"hidden_act", cfg.activation == "gelu_tanh" ? "gelu_new" : "gelu"},
      // Old and new transformers read different names for the same two values.
      {"rotary_pct", cfg.mixer.rope_fraction},
      {"partial_rotary_factor", cfg.mixer.rope_fraction},
      {"rotary_emb_base", cfg.mixer.rope_theta},
      {"rope_theta", cfg.mixer.rope_theta},
      {"rope_scaling", nullptr},
      {"max_position_embeddings", cfg.mixer.max_len},
      {"initializer_range", 0.02},
      {"layer_norm_eps", cfg.norm_eps},
      {"use_cache", true},
      {"use_parallel_residual", cfg.parallel_residual},
      {"attention_bias", cfg.mixer.qkv_bias},
      {"tie_word_embeddings", cfg.tie_embeddings},
      {"attention_dropout", 0.0},
      {"hidden_dropout", 0.0},
      {"classifier_dropout", 0.1},
      {"torch_dtype", "float32"},
  };
}

TensorMap hf_tensors_from_neox(SeqModelImpl& model) {
  torch::NoGradGuard ng;
  const auto& cfg = model.config();
  const auto t = model_tensors(model);
  auto out = hf_rename_out(t, neox_names(cfg));
  const int64_t D = cfg.mixer.d_model, H = cfg.mixer.n_head, Dh = cfg.mixer.d_head();
  auto get = [&](const std::string& n) { return t.at(n).detach().to(torch::kFloat32); };
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string h = layer(i) + "attention.query_key_value.",
                      b = "blocks." + std::to_string(i) + ".mixer.";
    // 3 x [D,D] -> [H,3,Dh,D] -> [3D,D]
    out[h + "weight"] =
        torch::stack({get(b + "q.weight").view({H, Dh, D}), get(b + "k.weight").view({H, Dh, D}),
                      get(b + "v.weight").view({H, Dh, D})},
                     1)
            .reshape({3 * D, D})
            .contiguous();
    if (cfg.mixer.qkv_bias)
      out[h + "bias"] =
          torch::stack({get(b + "q.bias").view({H, Dh}), get(b + "k.bias").view({H, Dh}),
                        get(b + "v.bias").view({H, Dh})},
                       1)
              .reshape({3 * D})
              .contiguous();
  }
  return out;
}

}  // namespace seqlab
