// Swap-then-finetune, step one: turn a pretrained softmax-attention model into a linear-attention
// one ("Finetuning Pretrained Transformers into RNNs", Kasai et al. 2021; "The Hedgehog & the
// Porcupine", Zhang et al. 2024).
//
// convert_model keeps every pretrained tensor (embeddings, q/k/v/o projections, norms, MLPs,
// head) and replaces each block's softmax kernel exp(q.k / sqrt(Dh)) by phi(q).phi(k) with the
// chosen feature map. The new parameters are the feature maps' own, initialised as the maps
// define them (feature_maps/*.h): t2r ~ U(+-1/sqrt(Dh)) like a Linear(Dh, F), b likewise;
// hedgehog W = identity, b = 0; rfa / performer draw their fixed random matrices from
// init_seed; elu1 / relu have none. --short-conv K adds linear attention's short convolution
// (mixers/linear_attention.h) set to the identity, so the student starts as the plain
// conversion. The result is a model directory like any other: it loads, evaluates, generates (as
// an RNN) and finetunes.
//
// Attention transfer (Hedgehog, section 4.1) then trains only the feature maps, everything else
// frozen, so that each layer's linear-attention weights match the teacher's softmax weights on
// the teacher's own hidden states: per layer, the cross-entropy between the rows,
//   L_l = mean over batch, heads, queries t of  -sum_{j<=t} A_tj log Ahat_tj,
// summed over layers (layers are independent given the teacher's states).
//
// --to hybrid (LoLCATs, Zhang et al. 2024; Liger, Lan et al. 2025) keeps exact softmax over the
// last W tokens and puts linear attention (any non-exponential map) under it for older tokens,
// with an optional fixed or key-derived decay (mixers/hybrid_attention.h). Its new parameters are
// the feature maps, a mixing factor per head (window_factor, sigmoid 1/2 at start) and, with
// --gate key, a gate bias per head. --transfer output replaces the weight cross-entropy by
// LoLCATs' stage-1 objective: per layer, the mean squared error between the teacher's and the
// student's mixer outputs (after o) on the teacher's hidden states,
//   L_l = mean over batch, time, channels of (y_student - y_teacher)^2.
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"

#include <string>
#include <vector>

namespace seqlab {

class DataParallel;

struct ConvertConfig {
  std::string to;  // feature map (t2r | hedgehog | elu1 | relu | rfa | performer) or hybrid
  std::string feature_map;    // --to hybrid: its feature map
  int64_t window = 0;         // --to hybrid: softmax window W (0 = gated linear attention)
  double decay = 1;           // --to hybrid: fixed decay per token, in (0, 1]
  std::string gate;           // --to hybrid: none | key
  std::string transfer;       // attention transfer objective: weights | output
  int64_t d_feature = 0;      // F per head (0 = d_head)
  int64_t short_conv = 0;     // linear attention: short convolution width, identity at start
  uint64_t init_seed = 0;     // seed of the new feature-map parameters
  int64_t distill_steps = 0;  // attention-transfer steps (0 = none)
  double distill_lr = 0;
  int64_t distill_batch = 0;
  int64_t distill_len = 0;    // tokens per distillation sequence (0 = the task's max_len)
  uint64_t distill_seed = 0;  // data seed of attention transfer

  template <class V>
  void visit(V&& v) {
    v(to, "to", std::string("t2r"),
      "the converted attention: a feature map t2r|hedgehog|elu1 (elu)|relu|rfa|performer "
      "(linear attention), or hybrid (softmax over the last --window tokens + gated linear "
      "attention with --feature-map, LoLCATs / Liger)");
    v(feature_map, "feature-map", std::string("hedgehog"), "--to hybrid: the feature map");
    v(window, "window", int64_t{64},
      "--to hybrid: exact softmax over the last W tokens (0 = none: gated linear attention)");
    v(decay, "decay", 1.0, "--to hybrid: decay of the linear state per token, in (0, 1]");
    v(gate, "gate", std::string("none"),
      "--to hybrid: none | key (a data-dependent decay per head from the key projection)");
    v(transfer, "transfer", std::string("weights"),
      "attention-transfer objective: weights (Hedgehog: cross-entropy of the attention weights) "
      "| output (LoLCATs stage 1: MSE of each layer's attention output)");
    v(d_feature, "d-feature", int64_t{0}, "feature-map width per head (0 = d_head)");
    v(short_conv, "short-conv", int64_t{0},
      "linear attention: a causal depthwise convolution of width K over q, k, v (Based, "
      "flash-linear-attention), initialised to the identity so the student starts as the plain "
      "conversion; attention transfer and finetuning train it (0 = none; not with --to hybrid)");
    v(init_seed, "init-seed", uint64_t{1}, "seed of the new feature-map parameters");
    v(distill_steps, "distill-steps", int64_t{0},
      "attention transfer: steps of training only the new parameters (feature maps, window "
      "factors, gate biases, short-conv kernels) to match the teacher's attention (--transfer; "
      "0 = none)");
    v(distill_lr, "distill-lr", 1e-2, "attention-transfer learning rate");
    v(distill_batch, "distill-batch", int64_t{8}, "attention-transfer sequences per step");
    v(distill_len, "distill-len", int64_t{0},
      "attention-transfer sequence length (0 = the model's training length)");
    v(distill_seed, "distill-seed", uint64_t{0}, "attention-transfer data seed");
  }
  ConvertConfig() { visit(DefaultsVisitor{}); }
  void validate() const;
  nlohmann::json to_json() const;
};

// The converted model: the teacher's weights in a linear-attention model. Throws seqlab::Error
// when the teacher is not a causal softmax-attention model.
SeqModel convert_model(SeqModelImpl& teacher, const ConvertConfig& cfg);

// The per-layer transfer losses L_l of a student against its teacher on one batch of tokens, for
// the objective `transfer` (weights: row cross-entropy of the attention weights; output: mean
// squared error of the mixer outputs, o included).
std::vector<double> transfer_losses(SeqModelImpl& teacher, SeqModelImpl& student,
                                    const torch::Tensor& tokens,
                                    const std::string& transfer = "weights");

// Whether a student parameter is new in conversion (not the teacher's): the feature maps, the
// hybrid's window factors and gate biases, the short convolution's kernel. Attention transfer
// trains exactly these.
bool is_conversion_param(const std::string& name);

struct DistillReport {
  std::vector<double> before, after;  // per layer, on a fixed held-out batch
  int64_t steps = 0;
  double seconds = 0;       // the whole transfer, held-out losses included
  double step_seconds = 0;  // the training steps alone (seconds per step = step_seconds / steps)
};

// Attention transfer: trains the student's feature-map parameters only (everything else is left
// as it was, requires_grad restored afterwards). Data: windows of `task`'s training stream. The
// teacher runs without autograd; each layer's backward runs as soon as its loss is known, so one
// layer's [B,H,T,T] weights are alive at a time.
// With dp set, this process is one rank of a data-parallel run (train/distributed.h): teacher and
// student must be the same on every rank; each step's batch is drawn by every rank and split
// into contiguous shards of rows, and the all-reduced gradient is the whole batch's, so the
// feature maps stay identical everywhere and equal one process's within fp32 rounding. Only rank
// 0 measures the held-out losses (before/after are empty elsewhere).
DistillReport distill_attention(SeqModelImpl& teacher, SeqModelImpl& student, const Task& task,
                                const ConvertConfig& cfg, int64_t length,
                                DataParallel* dp = nullptr);

}  // namespace seqlab
