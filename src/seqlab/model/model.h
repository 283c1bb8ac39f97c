// SeqModel: token embeddings (+ positions where the mixer needs them), n_layer pre-norm blocks
// (x + mixer(ln1(x)), then x + mlp(ln2(x)); or GPT-NeoX's parallel x + mixer(ln1(x)) +
// mlp(ln2(x))), a final norm and one of three heads:
//
//   lm        causal LM: logits over the vocabulary at every position (tied or untied)
//   tag       a class per position (per-token tagger)
//   classify  one class per sequence from the pooled final states (mean or last)
//
// tag and classify heads (and early exits) may be tied too (--tie-tag-head): class c is scored by
// token c's embedding row, so the classes must be token ids (0..n_classes-1) and no head weights
// exist.
//
// Like every mixer it has a parallel form (forward) and a recurrent form (step over a ModelState),
// and they agree: this is what makes a converted Transformer an RNN.
//
// Parameter names (the contract conversion and import/export rely on):
//   wte.weight [V,D], wpe.weight [max_len,D] (learned positions only),
//   blocks.{i}.ln1.{weight,bias} [D], blocks.{i}.mixer.*, blocks.{i}.ln2.*,
//   blocks.{i}.mlp.fc1.{weight [I,D],bias}, blocks.{i}.mlp.fc2.{weight [D,I],bias} (plain MLP,
//   I = mlp_width()) or blocks.{i}.mlp.{gate,up}.weight [I,D], blocks.{i}.mlp.down.weight [D,I]
//   (swiglu; biases with mlp_bias), ln_f.{weight,bias} [D], head.{weight,bias} (untied lm: weight
//   [V,D], no bias; untied tag/classify: weight [C,D], bias [C]; tied heads have none). Norms are
//   LayerNorm (weight, bias) or RMSNorm (weight only; --norm rms), model/norm.h.
#pragma once

#include "seqlab/mixers/mixer.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/model/norm.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace seqlab {

struct MlpImpl : torch::nn::Module {
  // A plain MLP, fc2(act(fc1 x)), with biases. activation: "gelu" (exact, erf) or "gelu_tanh"
  // (the tanh approximation GPT-2 calls gelu_new).
  MlpImpl(int64_t d_model, int64_t d_hidden, std::string activation = "gelu");
  // The model's MLP: plain as above, or swiglu: down(silu(gate x) * up x) (Shazeer 2020; Llama);
  // width cfg.mlp_width(), biases as cfg.mlp_bias.
  explicit MlpImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);                // [...,D] -> [...,D]
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};                 // plain
  torch::nn::Linear gate{nullptr}, up{nullptr}, down{nullptr};  // swiglu
  std::string activation_;
};
TORCH_MODULE(Mlp);

struct BlockImpl : torch::nn::Module {
  // Block `index` of a model: its mixer's random matrices (rfa, performer) are drawn from a seed
  // of its own, so layers do not share them.
  BlockImpl(const ModelConfig& cfg, int64_t index);
  torch::Tensor forward(const torch::Tensor& x);                // [B,T,D] -> [B,T,D]
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s);  // [B,D] -> [B,D]
  Norm ln1{nullptr}, ln2{nullptr};
  Mixer mixer;
  Mlp mlp{nullptr};       // null when the MLP width is 0
  bool parallel = false;  // x + mixer(ln1 x) + mlp(ln2 x)
};
TORCH_MODULE(Block);

// An early-exit classifier on one layer's states (classify heads with --exits): LayerNorm, pooling
// (the model's), Linear. The last layer's exit is the model's own ln_f + head.
struct ExitHeadImpl : torch::nn::Module {
  ExitHeadImpl(int64_t d_model, int64_t n_classes);
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(ExitHead);

// What early-exit inference decided for each sequence of a batch.
struct EarlyExitResult {
  torch::Tensor logits;  // [B,C] raw logits of the exit each sequence stopped at
  torch::Tensor probs;   // [B,C] their calibrated probabilities (softmax of logits / temperature)
  torch::Tensor exit;    // [B] int64: index into exit_layers() of that exit
  torch::Tensor layers;  // [B] int64: blocks run for that sequence
};

// The recurrent state of a whole model: one MixerState per block and the position of the next
// token.
struct ModelState {
  std::vector<std::unique_ptr<MixerState>> layers;
  int64_t pos = 0;
  ModelState clone() const;
};

class DeqImpl;  // model/deq.h

class SeqModelImpl : public torch::nn::Module {
 public:
  explicit SeqModelImpl(ModelConfig cfg);

  // tokens [B,T] int64 -> lm: [B,T,V]; tag: [B,T,C]; classify: [B,C]. valid [B,T] bool (classify
  // only, optional) marks the real tokens: pooling skips the rest (padding). Mean pooling averages
  // the valid positions; last pooling takes the last valid one.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& valid = {});

  // Early exits (classify heads built with --exits). The raw logits [B,C] of every exit, in the
  // order of config().exit_layers(); the last equals forward().
  std::vector<torch::Tensor> exit_logits(const torch::Tensor& tokens,
                                         const torch::Tensor& valid = {});
  // Inference that stops: blocks run one at a time, and after each exit layer the sequences whose
  // calibrated top probability is >= threshold stop there; the rest continue (only they are
  // computed further), and the last exit takes whatever is left. With threshold > 1 every sequence
  // runs every block and gets forward()'s logits.
  EarlyExitResult classify_early(const torch::Tensor& tokens, const torch::Tensor& valid,
                                 double threshold);
  // Per-exit softmax temperatures [n_exits] (1 until `seqlab calibrate` fits them); a buffer saved
  // with the weights as "exit_temperature". Undefined for a model without exits.
  torch::Tensor exit_temperature;
  // The final-norm hidden states: tokens [B,T] -> [B,T,D].
  torch::Tensor hidden(const torch::Tensor& tokens);

  // What each block's mixer sees on the parallel forward: ln1 of block l's input, for every l.
  // tokens [B,T] -> n_layer tensors [B,T,D]. (Attention transfer reads the teacher's.)
  std::vector<torch::Tensor> mixer_inputs(const torch::Tensor& tokens);

  ModelState init_state(int64_t batch) const;
  // One token per sequence: token [B] int64 -> lm: [B,V]; tag: [B,C]. Not for classify heads.
  torch::Tensor step(const torch::Tensor& token, ModelState& s);

  const ModelConfig& config() const { return cfg_; }
  // Whether positions are learned embeddings (which stop at max_context).
  bool uses_learned_positions() const { return pos_ == "learned"; }

  torch::nn::Embedding wte{nullptr};  // [V,D]
  torch::nn::Embedding wpe{nullptr};  // [max_len,D], learned positions only
  torch::nn::ModuleList blocks{nullptr};
  Norm ln_f{nullptr};
  torch::nn::Linear head{nullptr};  // null for a tied lm, tag or classify head
  Adapters adapters{nullptr};       // LoRA / Tied-LoRA, when attached (model/adapters.h)
  // --deq: one weight-tied equilibrium block (model/deq.h) in place of `blocks` (then empty).
  std::shared_ptr<DeqImpl> deq;
  torch::nn::ModuleList exits{nullptr};  // ExitHead per exit layer before the last (--exits)

  // Attaches adapters (registered as "adapters"): forward and step then use the adapted weights.
  void attach_adapters(const AdapterConfig& cfg);
  // Folds the attached adapters into the base weights and removes them; the function computed
  // is unchanged (within rounding).
  void merge_adapters();

 private:
  // Token + position embeddings: tokens [B,T], first position p0 -> [B,T,D].
  torch::Tensor embed(const torch::Tensor& tokens, int64_t p0);
  torch::Tensor project(const torch::Tensor& h);  // [...,D] -> [...,V or C]
  // Classify pooling over the valid positions: h [B,T,D], valid [B,T] or undefined -> [B,D].
  torch::Tensor pool(const torch::Tensor& h, const torch::Tensor& valid) const;
  // Logits [B,C] of exit j (index into exit_layers()) from that layer's output x [B,T,D].
  torch::Tensor exit_head(size_t j, const torch::Tensor& x, const torch::Tensor& valid);
  ModelConfig cfg_;
  std::string pos_;  // resolved: learned | sinusoidal | none
  std::vector<Block> block_list_;
  std::vector<ExitHead> exit_list_;
};
TORCH_MODULE(SeqModel);

// Sinusoidal position encodings (Vaswani et al. 2017) for positions p0..p0+T-1: [T,D].
torch::Tensor sinusoidal_positions(int64_t p0, int64_t T, int64_t D);

// Number of parameters (trainable only when trainable_only).
int64_t count_parameters(const torch::nn::Module& m, bool trainable_only = false);

}  // namespace seqlab
