// End-to-end distillation for finetuning: the KL-to-teacher term on next-token distributions.
//
// After a softmax teacher is converted into a linear-attention student (seqlab convert), the
// student is finetuned on its task's cross-entropy plus how far its next-token distributions are
// from the teacher's (LoLCATs, Zhang et al. 2024; Liger, Lan et al. 2025; the soft targets of
// Hinton et al. 2015):
//
//   loss = CE + w * T^2 * mean_{scored (b,t)} KL(p_T[b,t] || p_S[b,t]),   p = softmax(logits / T)
//
// KL(p || q) = sum_v p_v (log p_v - log q_v). T^2 keeps the gradient's scale independent of the
// temperature: the soft-target gradient shrinks as 1/T^2 (Hinton et al. 2015, section 2), so at
// w = 1 the KL term pulls as hard at T = 4 as at T = 1. At p_S = p_T the term is 0 with a zero
// gradient, so a student that is a copy of its teacher starts with exactly its CE loss.
//
// The teacher runs in eval mode, without gradients, on the same batch input as the student. Only
// an lm head defines a next-token distribution; tag and classify heads are refused. Padded
// vocabularies (more embedding rows than the tokenizer has ids: Pythia, Qwen2) are compared on
// the tokenizer's ids alone, the first V logits of both models. Data parallel: every rank loads
// the teacher from the same directory; the term is scaled by the rank's share of the scored
// positions like the CE term (train/trainer.cpp).
//
// B = batch, T = time (sequence length), V = the task's vocabulary (tokenizer ids).
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <torch/torch.h>

#include <string>

namespace seqlab {

// T^2 * KL(softmax(teacher / T) || softmax(student / T)), averaged over the positions where
// mask is true (none: 0). student_logits [B,T,Vs], teacher_logits [B,T,Vt] (no gradient needed),
// mask [B,T] bool; only the first `vocab` logits of each are compared (vocab <= Vs, Vt). Returns
// a scalar in student_logits' dtype, differentiable with respect to student_logits.
torch::Tensor kl_to_teacher(const torch::Tensor& student_logits,
                            const torch::Tensor& teacher_logits, const torch::Tensor& mask,
                            int64_t vocab, double temperature);

// The loaded teacher and the term it adds to a batch's loss. Not thread-safe (one forward at a
// time); CPU, like the trainer.
class DistillLoss {
 public:
  // Loads start.teacher and checks it against the student being trained; each problem is a
  // seqlab::Error naming the directory: the student's head is not lm; the directory holds no
  // model; the teacher's head is not lm; its vocabulary is neither the task's `vocab` nor the
  // student's (padded) one, or is smaller than `vocab`; its max context is below `max_len`, the
  // longest training sequence. start.distills() must hold (StartFrom::validate checked the rest).
  DistillLoss(const StartFrom& start, const ModelConfig& student, int64_t vocab, int64_t max_len);

  double weight() const { return weight_; }
  double temperature() const { return temperature_; }
  const ModelConfig& teacher_config() const { return teacher_cfg_; }

  // The KL term of batch b (before the weight) given the student's logits on b.input,
  // student_logits [B,T,Vs]: the teacher runs on b.input (and b.valid) without gradients and
  // the positions of b.mask are scored, as in task_loss. A scalar, differentiable with respect
  // to student_logits.
  torch::Tensor term(const torch::Tensor& student_logits, const Batch& b);

 private:
  std::string dir_;
  ModelConfig teacher_cfg_;
  SeqModel teacher_{nullptr};
  int64_t vocab_ = 0;
  double weight_ = 0, temperature_ = 1;
};

}  // namespace seqlab
