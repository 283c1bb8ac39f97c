// MixerConfig: the architecture of one sequence mixer, as a single typed field list.
//
// Every mixer is constructed from this struct. The same list yields CLI flags, --help, defaults,
// validation and config.json (see core/fields.h).
#pragma once

#include "seqlab/core/fields.h"

#include <cstdint>
#include <string>

namespace seqlab {

// The --help text of --arch and --feature-map, listing the registered names (mixers/registry.cpp,
// mixers/feature_maps/registry.cpp). The text lives until the next call on the same thread: use
// it at once (a field visitor does).
const char* arch_flag_help();
const char* feature_map_flag_help();

struct MixerConfig {
  std::string arch;         // softmax | linear | elman | gru | lstm | qrnn | s4d | mamba
  std::string feature_map;  // linear attention only: elu1 | relu | rfa | performer | t2r | hedgehog
  int64_t d_model = 0;      // D: width of the residual stream
  int64_t n_head = 0;       // H: attention heads (d_head = D / H)
  int64_t n_kv_head = 0;    // G: key/value heads (grouped-query attention); 0 = n_head
  int64_t d_state = 0;      // N: SSM state size per channel
  int64_t d_feature = 0;    // F: feature-map width per head before any doubling; 0 = d_head
  int64_t chunk_size = 0;   // C: chunk length of linear attention's chunked form
  bool causal = true;       // false = bidirectional (attention mixers only)
  int64_t qrnn_window = 0;  // QRNN convolution width: 1 or 2
  std::string qrnn_pooling;     // QRNN pooling: f | fo
  int64_t expand = 0;           // Mamba: inner width = expand * D
  int64_t d_conv = 0;           // Mamba: causal depthwise convolution width
  int64_t max_len = 0;          // longest sequence: softmax KV cache, learned positions
  uint64_t init_seed = 0;       // seed of fixed random matrices (rfa, performer) and initialisation
  bool mae = false;             // softmax/linear only: mixture of attentive experts (mixers/mae.h)
  std::string mae_gate;         // MAE gate input: prefix (mean of x_1..x_t) | token (x_t)
  int64_t mae_gate_hidden = 0;  // MAE gate MLP width; 0 = D
  bool rope = false;            // rotary position embeddings on q and k (mixers/rope.h)
  double rope_theta = 0;        // RoPE base (HF rope_theta / rotary_emb_base)
  double rope_fraction = 0;     // fraction of each head's dims that rotate (NeoX rotary_pct)
  bool qkv_bias = true;         // attention: q, k, v projections have biases
  bool o_bias = true;           // attention: the output projection has a bias
  int64_t window = 0;           // hybrid: exact-softmax window W (0 = none: gated linear attn)
  double decay = 1.0;           // hybrid: fixed per-step decay of the linear state, in (0, 1]
  std::string gate;             // hybrid: none | key (data-dependent decay from the key proj.)
  int64_t short_conv = 0;       // linear attention: causal depthwise conv width over q, k, v

  template <class V>
  void visit(V&& v) {
    v(arch, "arch", std::string("softmax"), arch_flag_help());
    v(feature_map, "feature-map", std::string("elu1"), feature_map_flag_help());
    v(d_model, "d-model", int64_t{64}, "width of the residual stream (D)");
    v(n_head, "n-head", int64_t{4}, "attention heads (H); D must be divisible by H");
    v(n_kv_head, "n-kv-head", int64_t{0},
      "key/value heads for grouped-query attention (must divide n_head; 0 = n_head)");
    v(d_state, "d-state", int64_t{16}, "state size per channel of the SSMs (N)");
    v(d_feature, "d-feature", int64_t{0},
      "feature-map width per head for rfa/performer/t2r/hedgehog (0 = d_head)");
    v(chunk_size, "chunk-size", int64_t{64}, "chunk length of linear attention's chunked form");
    v(causal, "causal", true, "causal mixing; false = bidirectional (attention only)");
    v(qrnn_window, "qrnn-window", int64_t{2}, "QRNN convolution window: 1 or 2");
    v(qrnn_pooling, "qrnn-pooling", std::string("fo"), "QRNN pooling: f or fo");
    v(expand, "expand", int64_t{2}, "Mamba inner width multiplier");
    v(d_conv, "d-conv", int64_t{4}, "Mamba causal convolution width");
    v(max_len, "max-context", int64_t{2048},
      "longest sequence the model handles (learned positions, KV cache)");
    v(init_seed, "init-seed", uint64_t{1234}, "seed of random feature matrices and initialisation");
    v(mae, "mae", false,
      "mixture of attentive experts (Peng et al. 2020): H experts each dropping one head, mixed "
      "by a gate (softmax/linear attention only, H >= 2)");
    v(mae_gate, "mae-gate", std::string("prefix"),
      "MAE gate input: prefix (mean of the tokens so far) | token (the current token)");
    v(mae_gate_hidden, "mae-gate-hidden", int64_t{0}, "MAE gate hidden width (0 = d_model)");
    v(rope, "rope", false,
      "rotary position embeddings on q and k (Hugging Face rotate-half; attention only)");
    v(rope_theta, "rope-theta", 10000.0, "RoPE base (theta)");
    v(rope_fraction, "rope-fraction", 1.0,
      "fraction of each head's dims that rotate (GPT-NeoX rotary_pct); the rest pass through");
    v(qkv_bias, "qkv-bias", true, "attention q, k, v projections have biases");
    v(o_bias, "o-bias", true, "attention output projection has a bias");
    v(window, "window", int64_t{0},
      "hybrid: exact softmax over the last W tokens, linear attention for older ones (0 = none)");
    v(decay, "decay", 1.0, "hybrid: decay of the linear-attention state per token, in (0, 1]");
    v(gate, "gate", std::string("none"),
      "hybrid: none | key (a data-dependent decay per head, computed from the key projection)");
    v(short_conv, "short-conv", int64_t{0},
      "linear attention: width K of a causal depthwise convolution over the q, k and v "
      "projections, so a key can carry the token before it (0 = none; Zoology's Based and "
      "flash-linear-attention use 4)");
  }

  MixerConfig() { visit(DefaultsVisitor{}); }

  int64_t d_head() const { return n_head > 0 ? d_model / n_head : 0; }
  // G: key/value heads (n_kv_head, or n_head when it is 0). Query head h reads kv head
  // h / (H / G), as Hugging Face's repeat_kv does.
  int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // R: the rotated dims of each head (even; 0 without RoPE).
  int64_t rope_dims() const;

  // Resolves aliases (--arch t2r means --arch linear --feature-map t2r) and throws seqlab::Error
  // on an impossible combination.
  void validate();
};

}  // namespace seqlab
