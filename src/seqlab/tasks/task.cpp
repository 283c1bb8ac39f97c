#include "seqlab/tasks/task.h"

#include <ATen/CPUGeneratorImpl.h>

namespace seqlab {

nlohmann::json TaskConfig::to_json() const {
  nlohmann::json j;
  const_cast<TaskConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

TaskConfig TaskConfig::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: task config must be a JSON object", source);
  TaskConfig c;
  FromJsonVisitor v{j, source, {}};
  c.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown task field '{}'", source, it.key());
  return c;
}

torch::Tensor task_loss(const torch::Tensor& logits, const Batch& b) {
  if (logits.dim() == 2) return torch::nn::functional::cross_entropy(logits, b.target);
  auto flat = logits.reshape({-1, logits.size(-1)});  // [B*T,C]
  auto ce = torch::nn::functional::cross_entropy(
      flat, b.target.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));  // [B*T]
  auto m = b.mask.reshape({-1}).to(ce.dtype());                                   // [B*T]
  return (ce * m).sum() / m.sum().clamp_min(1.0);
}

Score Task::score(const torch::Tensor& logits, const Batch& b) const {
  torch::NoGradGuard ng;
  Score s;
  s.loss = task_loss(logits, b).item<double>();
  auto pred = logits.argmax(-1);  // [B,T] or [B]
  auto right = pred.eq(b.target);
  s.n_seq = b.target.size(0);
  if (logits.dim() == 2) {
    s.n = s.n_seq;
    s.accuracy = right.to(torch::kDouble).mean().item<double>();
    s.seq_accuracy = s.accuracy;
  } else {
    s.n = b.mask.sum().item<int64_t>();
    s.accuracy = s.n ? right.logical_and(b.mask).sum().item<double>() / s.n : 0.0;
    auto seq_right = right.logical_or(b.mask.logical_not()).all(1);  // [B]
    s.seq_accuracy = seq_right.to(torch::kDouble).mean().item<double>();
  }
  return s;
}

}  // namespace seqlab
