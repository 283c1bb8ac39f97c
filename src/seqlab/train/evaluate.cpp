#include "seqlab/train/evaluate.h"

#include "seqlab/core/error.h"

#include <functional>

namespace seqlab {

uint64_t eval_seed(uint64_t seed, int64_t length) {
  return mix_seed(mix_seed(seed, 0xE7A15EEDULL), static_cast<uint64_t>(length));
}

namespace {

// Scores the evaluation set of (seed, length): n_seq sequences in batches of `batch`, the i-th
// batch drawn with seed mix_seed(eval_seed(seed, length), i), each scored by the task on
// logits_of(batch). Loss, accuracy and seq_accuracy are averaged over scored positions or
// sequences, and the task's extra metrics over sequences.
EvalResult score_eval_set(const Task& task, int64_t length, int64_t n_seq, int64_t batch,
                          uint64_t seed, Split split,
                          const std::function<torch::Tensor(const Batch&)>& logits_of) {
  EvalResult r;
  r.length = length;
  double loss_sum = 0, right = 0, seq_right = 0;
  int64_t seqs = 0;
  const uint64_t base = eval_seed(seed, length);
  for (int64_t done = 0, i = 0; done < n_seq; done += batch, ++i) {
    const int64_t b = std::min(batch, n_seq - done);
    auto data = task.sample_split(b, length, mix_seed(base, i), split);
    auto s = task.score(logits_of(data), data);
    loss_sum += s.loss * s.n;
    right += s.accuracy * s.n;
    r.n += s.n;
    seq_right += s.seq_accuracy * s.n_seq;
    for (const auto& [k, v] : s.extra) r.extra[k] += v * s.n_seq;
    seqs += s.n_seq;
  }
  if (r.n > 0) {
    r.loss = loss_sum / r.n;
    r.accuracy = right / r.n;
  }
  if (seqs > 0) {
    r.seq_accuracy = seq_right / seqs;
    for (auto& [k, v] : r.extra) v /= seqs;
  }
  return r;
}

}  // namespace

EvalResult evaluate(SeqModelImpl& model, const Task& task, int64_t length, int64_t n_seq,
                    int64_t batch, uint64_t seed, Split split) {
  torch::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  auto r = score_eval_set(task, length, n_seq, batch, seed, split,
                          [&](const Batch& data) { return model.forward(data.input, data.valid); });
  if (was_training) model.train();
  return r;
}

EvalResult evaluate_blind(const Task& task, int64_t length, int64_t n_seq, int64_t batch,
                          uint64_t seed, Split split) {
  torch::NoGradGuard ng;
  SEQLAB_CHECK(task.has_blind_baseline(),
               "task {}: the stream length alone fixes its targets, so it has no input-blind "
               "baseline",
               task.name());
  const bool classify = task.head() == "classify";
  const int64_t C =
      classify ? task.n_classes() : (task.head() == "lm" ? task.vocab_size() : task.n_classes());
  SEQLAB_CHECK(C > 0, "task {}: no classes to guess", task.name());
  const uint64_t base = eval_seed(seed, length);
  // counts[t][c] (or counts[c]): how often class c is the target at scored position t.
  torch::Tensor counts = torch::zeros(
      classify ? std::vector<int64_t>{C} : std::vector<int64_t>{length, C}, torch::kLong);
  const uint64_t fit = mix_seed(base, 0xB11DF17ULL);
  for (int64_t done = 0, i = 0; done < n_seq; done += batch, ++i) {
    auto data = task.sample_split(std::min(batch, n_seq - done), length, mix_seed(fit, i), split);
    SEQLAB_CHECK(classify || data.target.size(1) == length,
                 "task {}: sampled {} positions for length {}", task.name(), data.target.size(1),
                 length);
    if (classify) {
      counts += torch::one_hot(data.target, C).sum(0);
    } else {
      auto oh = torch::one_hot(data.target.clamp(0, C - 1), C);  // [B,T,C]
      counts += oh.mul(data.mask.unsqueeze(-1).to(torch::kLong)).sum(0);
    }
  }
  // The guess as logits with a wide margin, which the scorer's argmax turns back into the class.
  const torch::Tensor guess = torch::one_hot(counts.argmax(-1), C).to(torch::kFloat) * 30.0;
  auto r = score_eval_set(task, length, n_seq, batch, seed, split, [&](const Batch& data) {
    const int64_t b = data.target.size(0);
    auto logits =
        classify ? guess.unsqueeze(0).expand({b, C}) : guess.unsqueeze(0).expand({b, length, C});
    return logits.contiguous();
  });
  r.loss = 0;  // the cross-entropy of a 30-logit margin says nothing
  r.extra.clear();
  return r;
}

}  // namespace seqlab
