// ModelConfig: a whole model (embeddings, blocks of one mixer kind, head) as one typed field list.
// It is written to config.json and read back strictly; see core/fields.h for how one list drives
// defaults, CLI flags, --help and JSON.
#pragma once

#include "seqlab/mixers/mixer_config.h"
#include "seqlab/model/deq_config.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace seqlab {

struct ModelConfig {
  MixerConfig mixer;
  int64_t vocab_size = 0;  // V: input tokens
  int64_t n_layer = 0;     // blocks
  int64_t mlp_ratio = 0;   // MLP width = mlp_ratio * D; 0 = no MLP (mixer-only blocks)
  std::string activation;  // MLP nonlinearity: gelu (exact, erf) | gelu_tanh (GPT-2's gelu_new)
  std::string mlp;         // plain (fc1, activation, fc2) | swiglu (down(silu(gate x) * up x))
  int64_t d_mlp = 0;       // MLP hidden width; 0 = mlp_ratio * D
  bool mlp_bias = true;    // MLP projections have biases
  std::string norm;        // layer (LayerNorm, weight + bias) | rms (RMSNorm, weight only)
  double norm_eps = 0;     // epsilon of every norm
  bool parallel_residual = false;  // x + mixer(ln1 x) + mlp(ln2 x) (GPT-NeoX), not sequential
  std::string pos;                 // auto | learned | sinusoidal | none
  bool tie_embeddings = 0;         // lm head shares the token embedding
  bool tie_tag_head = 0;           // tag/classify head (and exits): class c scored by token c's row
  std::string head;       // lm (next token over V) | tag (a class per token) | classify (pooled)
  int64_t n_classes = 0;  // tag / classify: output classes
  std::string pooling;    // classify: mean | last
  DeqConfig deq;          // deep equilibrium mode (model/deq.h); off unless deq.enabled
  std::string exits;      // classify: early exits after these layers, "1,2,4" ("" = none)

  template <class V>
  void visit(V&& v) {
    mixer.visit(v);
    v(n_layer, "n-layer", int64_t{2}, "number of blocks");
    v(mlp_ratio, "mlp-ratio", int64_t{4}, "MLP width as a multiple of d_model (0 = no MLP)");
    v(activation, "activation", std::string("gelu"),
      "MLP activation: gelu (exact) | gelu_tanh (tanh approximation, GPT-2's gelu_new)");
    v(mlp, "mlp", std::string("plain"),
      "MLP kind: plain (fc1, activation, fc2) | swiglu (down(silu(gate x) * up x), Llama)");
    v(d_mlp, "d-mlp", int64_t{0}, "MLP hidden width (0 = mlp_ratio * d_model)");
    v(mlp_bias, "mlp-bias", true, "MLP projections have biases");
    v(norm, "norm", std::string("layer"), "norms: layer (LayerNorm) | rms (RMSNorm, Llama)");
    v(norm_eps, "norm-eps", 1e-5, "epsilon of every norm");
    v(parallel_residual, "parallel-residual", false,
      "GPT-NeoX blocks: x + mixer(ln1(x)) + mlp(ln2(x)) instead of two residual steps");
    v(pos, "pos", std::string("auto"),
      "positions: auto (learned for attention, none for recurrent mixers or with --rope)|learned|"
      "sinusoidal|none");
    v(tie_embeddings, "tie-embeddings", true, "lm head shares the token embedding matrix");
    v(vocab_size, "vocab-size", int64_t{2}, "input vocabulary size (set by the task)");
    v(head, "head", std::string("lm"), "output head: lm|tag|classify (set by the task)");
    v(n_classes, "n-classes", int64_t{0}, "classes of a tag/classify head (set by the task)");
    v(tie_tag_head, "tie-tag-head", false,
      "tag or classify head (and each early exit's) without its own weights: class c is scored "
      "by the dot product with token c's embedding row, so the classes must be the token ids "
      "0..n_classes-1 (needs n_classes <= vocab_size)");
    v(pooling, "pooling", std::string("mean"), "classify head pooling: mean|last");
    deq.visit(v);
    v(exits, "exits", std::string(""),
      "classify: early-exit heads after these layers, e.g. 1,2,4 (the last layer is always an "
      "exit; \"\" = none)");
  }

  ModelConfig() { visit(DefaultsVisitor{}); }

  // Resolves aliases and 'auto' values; throws seqlab::Error on an impossible combination.
  void validate();
  // The layers (1-based, increasing) whose pooled state has a classifier: the --exits list plus
  // the last layer. Empty for a model without exits.
  std::vector<int64_t> exit_layers() const;
  // Positions actually used, after resolving 'auto' for this mixer ('none' with RoPE).
  std::string resolved_pos(bool mixer_needs_positions) const;
  // The MLP's hidden width: d_mlp, or mlp_ratio * d_model when it is 0 (0 = no MLP).
  int64_t mlp_width() const;

  nlohmann::json to_json() const;
  // Strict: unknown keys and wrong types are errors naming `source`.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace seqlab
