// Low-rank adapters on a SeqModel's linear layers: LoRA and Tied-LoRA.
//
//   LoRA ("LoRA: Low-Rank Adaptation of Large Language Models", Hu et al. 2021): for each chosen
//   linear layer W [out,in] of each block l,
//       W_l' = W_l + (alpha / r) B_l A_l,       A_l [r,in], B_l [out,r]
//   A_l ~ N(0, 1/in), B_l = 0, so the adapted model starts equal to the base model.
//
//   Tied-LoRA ("Tied-LoRA", Renduchintala et al. 2023): one A, B per target, shared by all
//   layers, and per-layer scaling vectors u_l [r], v_l [out]:
//       W_l' = W_l + (alpha / r) diag(v_l) B diag(u_l) A
//   Any subset of {A, B, u, v} is trained (cfg.train); the rest stays frozen at its
//   initialisation. Which of A and B are shared is cfg.share (default both; a factor not shared
//   is one per layer, A_l or B_l, so share "" with train "A,B" is LoRA's form). Initialisation
//   keeps the start equal to the base model: A ~ N(0, 1/in), B ~ N(0, 1/r), u = 1, v = 1, and then
//   the first TRAINED factor in the order B, v, u, A is set to zero instead (so the product is 0
//   but gradients still flow into it). With nothing trained, the adapter is a no-op.
//
// Mechanism: the base weights stay registered (frozen) parameters; before every forward or step
// the model calls apply(), which sets each adapted Linear's `weight` member to W + delta, so any
// mixer's own forward uses the adapted weight without knowing about adapters. merge() folds the
// deltas into the base weights and detaches the adapters: merged and unmerged models compute the
// same function (tests/test_adapters.cpp).
//
// Trainable parameters, over the T chosen targets with shapes [out_t, in_t] and L layers:
//   LoRA       L * sum_t r (in_t + out_t)
//   Tied-LoRA  sum_t ([A] r in_t n_A + [B] out_t r n_B + L ([u] r + [v] out_t))
//              ([X] = 1 if X trains; n_X = 1 if X is shared, else L)
// Parameter names: adapters.layers.{l}.{target}.{A,B} (LoRA); adapters.shared.{target}.{A,B}
// (shared), adapters.layers.{l}.{target}.{A,B} (not shared) and adapters.layers.{l}.{target}.{u,v}
// (Tied-LoRA).
#pragma once

#include "seqlab/core/fields.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace seqlab {

struct AdapterConfig {
  std::string kind;     // none | lora | tied_lora
  int64_t rank = 0;     // r
  double alpha = 0;     // scale = alpha / r
  std::string targets;  // comma-separated linear layers of a block: q,k,v,o,fc1,fc2
  std::string train;    // tied_lora: which of A,B,u,v train (comma-separated)
  std::string share;    // tied_lora: which of A,B all layers share (comma-separated)
  uint64_t seed = 0;    // initialisation of A (and B for Tied-LoRA)

  template <class V>
  void visit(V&& v) {
    v(kind, "adapter", std::string("none"), "finetuning adapter: none (full) | lora | tied_lora");
    v(rank, "lora-rank", int64_t{8}, "adapter rank r");
    v(alpha, "lora-alpha", 16.0, "adapter scale alpha (delta is scaled by alpha / r)");
    v(targets, "lora-targets", std::string("q,k,v,o"),
      "linear layers to adapt in every block: q,k,v,o (attention), fc1,fc2 (MLP)");
    v(train, "tied-train", std::string("A,B,u,v"),
      "tied_lora: the factors that train (any of A,B,u,v; the rest stay frozen)");
    v(share, "tied-share", std::string("A,B"),
      "tied_lora: the factors one tensor serves for every layer (any of A,B; the others are one "
      "per layer)");
    v(seed, "adapter-seed", uint64_t{7}, "seed of the adapter initialisation");
  }
  AdapterConfig() { visit(DefaultsVisitor{}); }
  void validate() const;
  std::vector<std::string> target_list() const;
  bool trains(char factor) const;  // tied_lora: whether 'A', 'B', 'u' or 'v' trains
  bool shares(char factor) const;  // tied_lora: whether 'A' or 'B' is one tensor for all layers
  nlohmann::json to_json() const;
  static AdapterConfig from_json(const nlohmann::json& j, const std::string& source);
};

// One adapted linear layer: its base weight and the module whose `weight` member apply() sets.
struct AdaptedLinear {
  int64_t layer;
  std::string target;
  torch::nn::Linear linear{nullptr};
  torch::Tensor base;  // the registered (frozen) weight [out,in]
};

class AdaptersImpl : public torch::nn::Module {
 public:
  // blocks: the model's blocks, in order. Finds every target Linear in every block (an unknown
  // target is a seqlab::Error listing the available names) and creates the adapter parameters.
  AdaptersImpl(const AdapterConfig& cfg, torch::nn::ModuleList blocks);
  // Sets every adapted Linear's weight to base + delta (differentiable in the adapter factors).
  void apply();
  // Folds the deltas into the base weights and points each Linear back at its base parameter.
  void merge();
  // Points each Linear back at its base parameter without merging.
  void restore();
  // delta of one adapted linear [out,in].
  torch::Tensor delta(size_t i) const;
  const AdapterConfig& config() const { return cfg_; }
  const std::vector<AdaptedLinear>& adapted() const { return adapted_; }
  // The formula above, from the config and shapes alone (the tests compare it with a count of
  // the parameters that require grad).
  int64_t expected_trainable() const;

 private:
  AdapterConfig cfg_;
  std::vector<AdaptedLinear> adapted_;
  std::vector<std::array<torch::Tensor, 4>> factors_;  // per adapted linear: A, B, u, v
};
TORCH_MODULE(Adapters);

}  // namespace seqlab
