#include "seqlab/tasks/anbn.h"

namespace seqlab {

AnbnTask::AnbnTask(const TaskConfig& cfg, int64_t n_letters)
    : n_letters_(n_letters), threshold_(cfg.threshold) {
  SEQLAB_CHECK(n_letters == 2 || n_letters == 3, "anbn: 2 or 3 letters, got {}", n_letters);
  SEQLAB_CHECK(threshold_ > 0 && threshold_ < 1,
               "{}: --threshold must lie strictly between 0 and 1, got {}", name(), threshold_);
}

Batch AnbnTask::sample(int64_t batch, int64_t length, uint64_t) const {
  SEQLAB_CHECK(batch > 0, "{}: batch must be positive, got {}", name(), batch);
  SEQLAB_CHECK(length >= min_length(), "{}: length {} is below the minimum {} (n = 1)", name(),
               length, min_length());
  const int64_t n = n_of(length), end = 1 + n_letters_ * n;  // EOS position
  auto row = torch::full({length}, pad(), torch::kLong);     // [T]
  row[0] = bos();
  for (int64_t l = 0; l < n_letters_; ++l) row.slice(0, 1 + l * n, 1 + (l + 1) * n).fill_(l);
  row[end] = eos();
  auto target = torch::full({length}, pad(), torch::kLong);  // [T]
  target.slice(0, 0, length - 1).copy_(row.slice(0, 1));     // next symbol
  auto mask = torch::zeros({length}, torch::kBool);          // [T]
  mask.slice(0, 0, end).fill_(true);                         // BOS .. last letter
  Batch b;
  b.input = row.unsqueeze(0).repeat({batch, 1});      // [B,T]
  b.target = target.unsqueeze(0).repeat({batch, 1});  // [B,T]
  b.mask = mask.unsqueeze(0).repeat({batch, 1});      // [B,T]
  return b;
}

torch::Tensor AnbnTask::determined(const Batch& b) const {
  return b.mask.logical_and(b.input.ge(1).logical_and(b.input.lt(n_letters_)));  // [B,T]
}

Score AnbnTask::score(const torch::Tensor& logits, const Batch& b) const {
  torch::NoGradGuard ng;
  Batch det = b;
  det.mask = determined(b);  // [B,T]
  Score s = Task::score(logits, det);
  auto logp = torch::log_softmax(logits.to(torch::kDouble), -1);         // [B,T,V]
  auto p = logp.gather(-1, b.target.unsqueeze(-1)).squeeze(-1).exp();    // [B,T]
  auto ok = p.gt(threshold_).logical_or(det.mask.logical_not()).all(1);  // [B]
  s.extra["accepted"] = ok.to(torch::kDouble).mean().item<double>();
  s.extra["string_n"] = static_cast<double>(n_of(b.input.size(1)));
  return s;
}

}  // namespace seqlab
