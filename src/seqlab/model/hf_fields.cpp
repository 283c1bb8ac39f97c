// The config.json field readers and the shared config mapping the HF family files use
// (declared in hf_import.h): typed, strict reads that name the key and the file.
#include "seqlab/model/hf_import.h"

#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/mixers/softmax_attention.h"

#include <fmt/format.h>

namespace seqlab {

// ---- config.json values ------------------------------------------------------------------------

const nlohmann::json* hf_find(const nlohmann::json& hf, const char* key) {
  auto it = hf.find(key);
  return it == hf.end() || it->is_null() ? nullptr : &*it;
}

int64_t hf_positive_int(const nlohmann::json& hf, const char* key, const std::string& source) {
  // Sizes beyond 2^40 are no real model's, and bounding them keeps products like 4 * n_embd
  // inside int64.
  constexpr uint64_t kMax = uint64_t{1} << 40;
  const auto* v = hf_find(hf, key);
  SEQLAB_CHECK(v, "{}: missing \"{}\"", source, key);
  // A parsed non-negative integer is unsigned, one built in C++ may be signed: both count.
  const bool ok = v->is_number_unsigned() ? v->get<uint64_t>() > 0 && v->get<uint64_t>() <= kMax
                                          : v->is_number_integer() && v->get<int64_t>() > 0 &&
                                                static_cast<uint64_t>(v->get<int64_t>()) <= kMax;
  SEQLAB_CHECK(ok, "{}: \"{}\" must be a positive integer (at most 2^40), got {}", source, key,
               json_for_message(*v));
  return v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
}

bool hf_bool_or(const nlohmann::json& hf, const char* key, bool def, const std::string& source) {
  const auto* v = hf_find(hf, key);
  if (!v) return def;
  SEQLAB_CHECK(v->is_boolean(), "{}: \"{}\" must be true or false, got {}", source, key,
               json_for_message(*v));
  return v->get<bool>();
}

double hf_number_or(const nlohmann::json& hf, const char* key, double def,
                    const std::string& source) {
  const auto* v = hf_find(hf, key);
  if (!v) return def;
  SEQLAB_CHECK(v->is_number(), "{}: \"{}\" must be a number, got {}", source, key,
               json_for_message(*v));
  return v->get<double>();
}

std::string hf_string_or(const nlohmann::json& hf, const char* key, const std::string& def,
                         const std::string& source) {
  const auto* v = hf_find(hf, key);
  if (!v) return def;
  SEQLAB_CHECK(v->is_string(), "{}: \"{}\" must be a string, got {}", source, key,
               json_for_message(*v));
  return v->get<std::string>();
}

void hf_check_architectures(const nlohmann::json& hf, const std::vector<std::string>& allowed,
                            const std::string& source) {
  const auto* archs = hf_find(hf, "architectures");
  if (!archs) return;
  SEQLAB_CHECK(archs->is_array(), "{}: \"architectures\" must be a list", source);
  for (const auto& a : *archs)
    SEQLAB_CHECK(a.is_string() && std::find(allowed.begin(), allowed.end(), a.get<std::string>()) !=
                                      allowed.end(),
                 "{}: architecture {} is not supported ({})", source, json_for_message(a),
                 fmt::join(allowed, " or "));
}

void hf_check_rope_scaling(const nlohmann::json& hf, const std::string& source) {
  const auto* s = hf_find(hf, "rope_scaling");
  if (!s) return;
  std::string type = "(no type)";
  if (s->is_object())
    for (const char* key : {"rope_type", "type"})
      if (const auto* t = hf_find(*s, key); t && t->is_string()) type = t->get<std::string>();
  SEQLAB_CHECK(type == "default",
               "{}: rope_scaling type '{}' is not supported (seqlab's RoPE is unscaled; "
               "rope_scaling must be null)",
               source, type);
}

void hf_set_mlp_width(ModelConfig& c, int64_t width) {
  const int64_t D = c.mixer.d_model;
  if (D > 0 && width % D == 0) {
    c.mlp_ratio = width / D;
    c.d_mlp = 0;
  } else {
    c.d_mlp = width;
  }
}

ModelConfig hf_rope_config(const nlohmann::json& hf, const std::string& source) {
  ModelConfig c;
  c.mixer.arch = SoftmaxAttentionImpl::kArch;
  c.mixer.causal = true;
  c.mixer.d_model = hf_positive_int(hf, "hidden_size", source);
  c.mixer.n_head = hf_positive_int(hf, "num_attention_heads", source);
  SEQLAB_CHECK(c.mixer.d_model % c.mixer.n_head == 0,
               "{}: hidden_size {} is not divisible by num_attention_heads {}", source,
               c.mixer.d_model, c.mixer.n_head);
  c.mixer.max_len = hf_positive_int(hf, "max_position_embeddings", source);
  c.mixer.rope = true;
  c.n_layer = hf_positive_int(hf, "num_hidden_layers", source);
  c.vocab_size = hf_positive_int(hf, "vocab_size", source);
  hf_set_mlp_width(c, hf_positive_int(hf, "intermediate_size", source));
  c.pos = "none";
  c.head = "lm";
  c.tie_embeddings = hf_bool_or(hf, "tie_word_embeddings", false, source);
  return c;
}

void hf_validate(ModelConfig& c, const std::string& source) {
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
}

// ---- files -------------------------------------------------------------------------------------

}  // namespace seqlab
