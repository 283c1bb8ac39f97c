// The KL-to-teacher term of end-to-end distillation (train/distill_loss.h).
#include "seqlab/train/distill_loss.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"

#include <filesystem>

namespace seqlab {

namespace fs = std::filesystem;

torch::Tensor kl_to_teacher(const torch::Tensor& student_logits,
                            const torch::Tensor& teacher_logits, const torch::Tensor& mask,
                            int64_t vocab, double temperature) {
  SEQLAB_CHECK(student_logits.dim() == 3 && teacher_logits.dim() == 3 &&
                   student_logits.size(0) == teacher_logits.size(0) &&
                   student_logits.size(1) == teacher_logits.size(1),
               "kl_to_teacher: logits [B,T,V] of the same B and T expected");
  SEQLAB_CHECK(vocab > 0 && vocab <= student_logits.size(-1) && vocab <= teacher_logits.size(-1),
               "kl_to_teacher: vocab {} outside the logits ({} and {})", vocab,
               student_logits.size(-1), teacher_logits.size(-1));
  // Padded rows are never a token: both distributions are over the first `vocab` ids.
  auto s = student_logits.slice(-1, 0, vocab) / temperature;                      // [B,T,V]
  auto t = teacher_logits.slice(-1, 0, vocab).to(s.scalar_type()) / temperature;  // [B,T,V]
  auto log_ps = torch::log_softmax(s, -1);                                        // [B,T,V]
  auto log_pt = torch::log_softmax(t, -1);                                        // [B,T,V]
  // log_softmax of finite logits is finite, so p_T = 0 (an underflowed exp) contributes 0, not
  // 0 * inf.
  auto kl = (log_pt.exp() * (log_pt - log_ps)).sum(-1);  // [B,T]
  auto m = mask.to(kl.scalar_type());                    // [B,T]
  return (kl * m).sum() / m.sum().clamp_min(1.0) * (temperature * temperature);
}

DistillLoss::DistillLoss(const StartFrom& start, const ModelConfig& student, int64_t vocab,
                         int64_t max_len)
    : dir_(start.teacher),
      vocab_(vocab),
      weight_(start.kl_weight),
      temperature_(start.kl_temperature) {
  SEQLAB_CHECK(student.head == "lm",
               "--kl-weight matches next-token distributions, which only an lm head has; this "
               "task trains a {} head (drop --teacher and --kl-weight)",
               student.head);
  SEQLAB_CHECK(fs::is_regular_file(fs::path(dir_) / kConfigFile),
               "--teacher {}: not a model directory (no {} in it)", dir_, kConfigFile);
  auto t = load_model_dir(dir_);
  teacher_cfg_ = t.config;
  SEQLAB_CHECK(teacher_cfg_.head == "lm",
               "--teacher {}: its head is {}, not lm: it has no next-token distribution to match",
               dir_, teacher_cfg_.head);
  // The same padding rule as the student's (train/trainer.cpp): rows past the tokenizer's ids
  // are allowed, but a teacher over another vocabulary is not a teacher of this student.
  SEQLAB_CHECK(teacher_cfg_.vocab_size >= vocab && (teacher_cfg_.vocab_size == vocab ||
                                                    teacher_cfg_.vocab_size == student.vocab_size),
               "--teacher {}: its vocabulary has {} tokens, the student's {} (its task's "
               "tokenizer {}); distillation needs the same token ids",
               dir_, teacher_cfg_.vocab_size, student.vocab_size, vocab);
  SEQLAB_CHECK(teacher_cfg_.mixer.max_len >= max_len,
               "--teacher {}: its max context {} is shorter than the training length (--max-len "
               "{})",
               dir_, teacher_cfg_.mixer.max_len, max_len);
  teacher_ = t.model;
  if (teacher_->adapters) teacher_->merge_adapters();  // one matmul per layer, not two
  teacher_->eval();
  for (auto& p : teacher_->parameters()) p.set_requires_grad(false);
}

torch::Tensor DistillLoss::term(const torch::Tensor& student_logits, const Batch& b) {
  torch::Tensor teacher_logits;
  {
    torch::NoGradGuard no_grad;
    teacher_logits = teacher_->forward(b.input, b.valid);  // [B,T,Vt]
  }
  return kl_to_teacher(student_logits, teacher_logits, b.mask, vocab_, temperature_);
}

}  // namespace seqlab
