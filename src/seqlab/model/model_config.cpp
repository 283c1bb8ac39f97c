#include "seqlab/model/model_config.h"

#include "seqlab/mixers/registry.h"

namespace seqlab {

void ModelConfig::validate() {
  mixer.validate();
  SEQLAB_CHECK(vocab_size > 0, "vocab_size must be positive, got {}", vocab_size);
  SEQLAB_CHECK(n_layer > 0, "n_layer must be positive, got {}", n_layer);
  SEQLAB_CHECK(mlp_ratio >= 0, "mlp_ratio must be >= 0, got {}", mlp_ratio);
  SEQLAB_CHECK(activation == "gelu" || activation == "gelu_tanh",
               "activation must be gelu or gelu_tanh, got '{}'", activation);
  SEQLAB_CHECK(mlp == "plain" || mlp == "swiglu", "mlp must be plain or swiglu, got '{}'", mlp);
  SEQLAB_CHECK(d_mlp >= 0, "d_mlp must be >= 0 (0 = mlp_ratio * d_model), got {}", d_mlp);
  SEQLAB_CHECK(norm == "layer" || norm == "rms", "norm must be layer or rms, got '{}'", norm);
  SEQLAB_CHECK(norm_eps > 0, "norm_eps must be positive, got {}", norm_eps);
  SEQLAB_CHECK(!parallel_residual || mlp_width() > 0,
               "--parallel-residual needs an MLP (mlp_ratio or d_mlp > 0)");
  SEQLAB_CHECK(pos == "auto" || pos == "learned" || pos == "sinusoidal" || pos == "none",
               "pos must be auto, learned, sinusoidal or none, got '{}'", pos);
  SEQLAB_CHECK(head == "lm" || head == "tag" || head == "classify",
               "head must be lm, tag or classify, got '{}'", head);
  if (head != "lm")
    SEQLAB_CHECK(n_classes > 1, "a {} head needs n_classes > 1, got {}", head, n_classes);
  // Configs are validated before a task sets the head (the default, lm, stands in until then);
  // the trainer rejects --tie-tag-head once the task's head is known and is lm.
  if (tie_tag_head && head != "lm")
    SEQLAB_CHECK(n_classes <= vocab_size,
                 "--tie-tag-head scores class c with token c's embedding, so it needs n_classes "
                 "<= vocab_size (got {} classes, {} tokens)",
                 n_classes, vocab_size);
  SEQLAB_CHECK(pooling == "mean" || pooling == "last", "pooling must be mean or last, got '{}'",
               pooling);
  if (!exits.empty()) {
    SEQLAB_CHECK(head == "classify", "--exits needs a classify head (this model's is {})", head);
    exit_layers();  // validates the list
  }
  SEQLAB_CHECK(head != "lm" || mixer.causal,
               "an lm head needs a causal mixer (a bidirectional one would see the next token)");
  if (deq.enabled) {
    deq.validate();
    SEQLAB_CHECK(n_layer == 1,
                 "--deq uses one weight-tied block solved to its fixed point; set --n-layer 1 "
                 "(got {}); its depth is --deq-max-iter",
                 n_layer);
    SEQLAB_CHECK(arch_entry(mixer.arch).traits.attention, "--deq needs {}, not '{}'",
                 attention_arch_names("or"), mixer.arch);
    SEQLAB_CHECK(exits.empty(), "--deq has no layers to exit from; drop --exits");
    SEQLAB_CHECK(norm == "layer" && mlp == "plain" && !parallel_residual && mlp_bias && d_mlp == 0,
                 "--deq blocks use LayerNorm and a plain MLP with biases (mlp_ratio); drop --norm, "
                 "--mlp, --d-mlp, --mlp-bias and --parallel-residual");
  }
}

std::vector<int64_t> ModelConfig::exit_layers() const {
  std::vector<int64_t> layers;
  if (exits.empty()) return layers;
  size_t start = 0;
  while (start <= exits.size()) {
    const size_t end = std::min(exits.find(',', start), exits.size());
    const std::string item = exits.substr(start, end - start);
    int64_t layer = 0;
    size_t used = 0;
    try {
      layer = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(used == item.size() && !item.empty(),
                 "--exits: '{}' is not a layer number (expected e.g. 1,2,4)", item);
    SEQLAB_CHECK(layer >= 1 && layer <= n_layer,
                 "--exits: layer {} does not exist; this model has layers 1..{}", layer, n_layer);
    SEQLAB_CHECK(layers.empty() || layer > layers.back(),
                 "--exits must list layers in increasing order without repeats, got '{}'", exits);
    layers.push_back(layer);
    start = end + 1;
  }
  if (layers.back() != n_layer) layers.push_back(n_layer);
  return layers;
}

std::string ModelConfig::resolved_pos(bool mixer_needs_positions) const {
  if (pos != "auto") return pos;
  return mixer_needs_positions && !mixer.rope ? "learned" : "none";
}

int64_t ModelConfig::mlp_width() const {
  return d_mlp > 0 ? d_mlp : mlp_ratio * mixer.d_model;
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j;
  const_cast<ModelConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: expected a JSON object", source);
  ModelConfig c;
  FromJsonVisitor v{j, source, {}};
  c.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown field '{}'", source, it.key());
  c.validate();
  return c;
}

}  // namespace seqlab
