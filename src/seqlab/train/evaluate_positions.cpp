#include "seqlab/train/evaluate_positions.h"

#include "seqlab/core/error.h"

#include <cmath>

namespace seqlab {

std::vector<PositionBucket> evaluate_lm_positions(SeqModelImpl& model, const LmTask& task,
                                                  Split split, int64_t context, int64_t bucket,
                                                  int64_t batch, int64_t max_tokens) {
  SEQLAB_CHECK(context > 0 && batch > 0 && bucket > 0,
               "evaluate_lm_positions: context, bucket and batch must be positive, got {}, {}, {}",
               context, bucket, batch);
  const auto& s = task.tokens(split);
  int64_t n = static_cast<int64_t>(s.size());
  if (max_tokens > 0) n = std::min(n, max_tokens);
  const int64_t windows = (n - 1) / context;
  SEQLAB_CHECK(windows >= 1,
               "evaluate_lm_positions: the {} split of corpus '{}' has {} tokens, less than one "
               "window of {} predictions",
               split_name(split), task.corpus(), n, context);
  torch::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  auto per_pos = torch::zeros({context}, torch::kDouble);  // summed NLL at each position
  for (int64_t w0 = 0; w0 < windows; w0 += batch) {
    const int64_t b = std::min(batch, windows - w0);
    auto input = torch::empty({b, context}, torch::kLong);   // [b,C]
    auto target = torch::empty({b, context}, torch::kLong);  // [b,C]
    auto in = input.accessor<int64_t, 2>();
    auto tg = target.accessor<int64_t, 2>();
    for (int64_t i = 0; i < b; ++i)
      for (int64_t t = 0; t < context; ++t) {
        in[i][t] = s[(w0 + i) * context + t];
        tg[i][t] = s[(w0 + i) * context + t + 1];
      }
    auto logp = torch::log_softmax(model.forward(input).to(torch::kFloat), -1);  // [b,C,V]
    auto nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1);              // [b,C]
    per_pos += nll.to(torch::kDouble).sum(0);
  }
  if (was_training) model.train();
  std::vector<PositionBucket> out;
  auto acc = per_pos.accessor<double, 1>();
  for (int64_t lo = 0; lo < context; lo += bucket) {
    PositionBucket pb;
    pb.lo = lo;
    pb.hi = std::min(context, lo + bucket);
    double sum = 0;
    for (int64_t t = pb.lo; t < pb.hi; ++t) sum += acc[t];
    pb.tokens = (pb.hi - pb.lo) * windows;
    pb.nll = sum / static_cast<double>(pb.tokens);
    pb.ppl = std::exp(pb.nll);
    out.push_back(pb);
  }
  return out;
}

}  // namespace seqlab
