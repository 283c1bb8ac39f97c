#include "seqlab/train/evaluate.h"

namespace seqlab {

uint64_t eval_seed(uint64_t seed, int64_t length) {
  return mix_seed(mix_seed(seed, 0xE7A15EEDULL), static_cast<uint64_t>(length));
}

EvalResult evaluate(SeqModelImpl& model, const Task& task, int64_t length, int64_t n_seq,
                    int64_t batch, uint64_t seed, Split split) {
  torch::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  EvalResult r;
  r.length = length;
  double loss_sum = 0, right = 0, seq_right = 0;
  int64_t seqs = 0;
  const uint64_t base = eval_seed(seed, length);
  for (int64_t done = 0, i = 0; done < n_seq; done += batch, ++i) {
    const int64_t b = std::min(batch, n_seq - done);
    auto data = task.sample_split(b, length, mix_seed(base, i), split);
    auto s = task.score(model.forward(data.input, data.valid), data);
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
  if (was_training) model.train();
  return r;
}

}  // namespace seqlab
