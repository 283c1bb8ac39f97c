// Swap-then-finetune, step one: turn a pretrained softmax-attention model into a linear-attention
// one ("Finetuning Pretrained Transformers into RNNs", Kasai et al. 2021; "The Hedgehog & the
// Porcupine", Zhang et al. 2024).
//
// convert_model keeps every pretrained tensor (embeddings, q/k/v/o projections, norms, MLPs,
// head) and replaces each block's softmax kernel exp(q.k / sqrt(Dh)) by phi(q).phi(k) with the
// chosen feature map. The new parameters are the feature maps' own, initialised as the maps
// define them (feature_maps/*.h): t2r ~ U(+-1/sqrt(Dh)) like a Linear(Dh, F), b likewise;
// hedgehog W = identity, b = 0; rfa / performer draw their fixed random matrices from
// init_seed; elu1 / relu have none. The result is a model directory like any other: it loads,
// evaluates, generates (as an RNN) and finetunes.
//
// Attention transfer (Hedgehog, section 4.1) then trains only the feature maps, everything else
// frozen, so that each layer's linear-attention weights match the teacher's softmax weights on
// the teacher's own hidden states: per layer, the cross-entropy between the rows,
//   L_l = mean over batch, heads, queries t of  -sum_{j<=t} A_tj log Ahat_tj,
// summed over layers (layers are independent given the teacher's states).
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"

#include <string>
#include <vector>

namespace seqlab {

class DataParallel;

struct ConvertConfig {
  std::string to;             // feature map: t2r | hedgehog | elu1 | relu | rfa | performer
  int64_t d_feature = 0;      // F per head (0 = d_head)
  uint64_t init_seed = 0;     // seed of the new feature-map parameters
  int64_t distill_steps = 0;  // attention-transfer steps (0 = none)
  double distill_lr = 0;
  int64_t distill_batch = 0;
  int64_t distill_len = 0;    // tokens per distillation sequence (0 = the task's max_len)
  uint64_t distill_seed = 0;  // data seed of attention transfer

  template <class V>
  void visit(V&& v) {
    v(to, "to", std::string("t2r"),
      "feature map of the converted model: t2r|hedgehog|elu1 (elu)|relu|rfa|performer");
    v(d_feature, "d-feature", int64_t{0}, "feature-map width per head (0 = d_head)");
    v(init_seed, "init-seed", uint64_t{1}, "seed of the new feature-map parameters");
    v(distill_steps, "distill-steps", int64_t{0},
      "Hedgehog attention transfer: steps of training only the feature maps to match the "
      "teacher's attention weights (0 = none)");
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

// The per-layer transfer losses L_l of a student against its teacher on one batch of tokens.
std::vector<double> transfer_losses(SeqModelImpl& teacher, SeqModelImpl& student,
                                    const torch::Tensor& tokens);

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
