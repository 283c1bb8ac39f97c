#include "seqlab/train/evaluate_lm.h"

#include "seqlab/core/error.h"

#include <cmath>

namespace seqlab {

namespace {

// Sum of -log p(target) over windows of `len` predicted tokens starting at the given offsets.
double window_nll_sum(SeqModelImpl& model, const std::vector<int64_t>& s,
                      const std::vector<int64_t>& offsets, int64_t len) {
  const auto b = static_cast<int64_t>(offsets.size());
  auto input = torch::empty({b, len}, torch::kLong);   // [b,len]
  auto target = torch::empty({b, len}, torch::kLong);  // [b,len]
  auto in = input.accessor<int64_t, 2>();
  auto tg = target.accessor<int64_t, 2>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < len; ++t) {
      in[i][t] = s[offsets[i] + t];
      tg[i][t] = s[offsets[i] + t + 1];
    }
  auto logits = model.forward(input);  // [b,len,V]
  auto nll = torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), target.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));  // []
  return nll.item<double>();
}

}  // namespace

LmEvalResult evaluate_lm(SeqModelImpl& model, const LmTask& task, Split split, int64_t context,
                         int64_t batch, int64_t max_tokens) {
  SEQLAB_CHECK(context > 0 && batch > 0,
               "evaluate_lm: context and batch must be positive, got {} and {}", context, batch);
  SEQLAB_CHECK(max_tokens >= 0, "evaluate_lm: max_tokens must be >= 0, got {}", max_tokens);
  const auto& s = task.tokens(split);
  int64_t n = static_cast<int64_t>(s.size());
  if (max_tokens > 0) n = std::min(n, max_tokens);
  SEQLAB_CHECK(n >= 2, "evaluate_lm: the {} split of corpus '{}' has {} tokens; need at least 2",
               split_name(split), task.corpus(), n);

  torch::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t predicted = n - 1;
  const int64_t full = predicted / context, rest = predicted % context;
  double sum = 0;
  std::vector<int64_t> offsets;
  for (int64_t w = 0; w < full; w += batch) {
    offsets.clear();
    for (int64_t i = w; i < std::min(full, w + batch); ++i) offsets.push_back(i * context);
    sum += window_nll_sum(model, s, offsets, context);
  }
  if (rest > 0) sum += window_nll_sum(model, s, {full * context}, rest);
  if (was_training) model.train();

  LmEvalResult r;
  r.tokens = predicted;
  r.nll = sum / static_cast<double>(predicted);
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace seqlab
