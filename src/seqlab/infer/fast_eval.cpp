#include "seqlab/infer/fast_eval.h"

#include "seqlab/core/error.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

double token_nll(const float* logits, int64_t V, int64_t target) {
  SEQLAB_CHECK(target >= 0 && target < V, "token {} is outside the model's vocabulary of {}",
               target, V);
  float mx = logits[0];
  for (int64_t v = 1; v < V; ++v) mx = std::max(mx, logits[v]);
  double sum = 0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v] - mx));
  return std::log(sum) + static_cast<double>(mx) - static_cast<double>(logits[target]);
}

namespace {

// Adds to `total`, window by window, the sums of -log p(target) over `rows` windows that start at
// s[first + i * context] (i < rows) and predict len[i] tokens each, non-increasing in i (only the
// stream's last window is shorter), so the rows still running at position t are a prefix of them.
// Each window's sum is kept apart and the windows are added in order, so the result does not depend
// on how many share a group.
void add_group_nll(FastModel& model, const std::vector<int64_t>& s, int64_t first, int64_t context,
                   const std::vector<int64_t>& len, std::vector<DecoderState>& states,
                   std::vector<float>& logits, double& total) {
  const auto rows = static_cast<int64_t>(len.size());
  const int64_t V = model.vocab_size();
  std::vector<DecoderState*> ptrs(rows);
  for (int64_t i = 0; i < rows; ++i) {
    states[i] = model.init_state();
    ptrs[i] = &states[i];
  }
  std::vector<int64_t> tokens(rows);
  std::vector<double> row_sum(rows, 0.0);
  for (int64_t t = 0; t < len.front(); ++t) {
    int64_t active = 0;  // len is non-increasing: the running rows are a prefix
    while (active < rows && len[active] > t) ++active;
    for (int64_t i = 0; i < active; ++i) tokens[i] = s[first + i * context + t];
    model.step_batch(tokens.data(), ptrs.data(), active, logits.data());
    for (int64_t i = 0; i < active; ++i)
      row_sum[i] += token_nll(logits.data() + i * V, V, s[first + i * context + t + 1]);
  }
  for (double r : row_sum) total += r;
}

}  // namespace

FastLmEval fast_perplexity(FastModel& model, const std::vector<int64_t>& stream, int64_t context,
                           int64_t batch, int64_t max_tokens, const std::string& what) {
  SEQLAB_CHECK(context > 0 && batch > 0,
               "fast_perplexity: context and batch must be positive, got {} and {}", context,
               batch);
  SEQLAB_CHECK(max_tokens >= 0, "fast_perplexity: max_tokens must be >= 0, got {}", max_tokens);
  int64_t n = static_cast<int64_t>(stream.size());
  if (max_tokens > 0) n = std::min(n, max_tokens);
  SEQLAB_CHECK(n >= 2, "fast_perplexity: {} has {} tokens; need at least 2", what, n);

  const int64_t predicted = n - 1;
  const int64_t windows = (predicted + context - 1) / context;  // the last may be shorter
  std::vector<DecoderState> states(std::min(batch, windows));
  std::vector<float> logits(static_cast<size_t>(states.size() * model.vocab_size()));
  std::vector<int64_t> len;
  double sum = 0;
  for (int64_t w = 0; w < windows; w += batch) {
    len.clear();
    for (int64_t i = w; i < std::min(windows, w + batch); ++i)
      len.push_back(std::min(context, predicted - i * context));
    add_group_nll(model, stream, w * context, context, len, states, logits, sum);
  }
  FastLmEval r;
  r.tokens = predicted;
  r.nll = sum / static_cast<double>(predicted);
  r.ppl = std::exp(r.nll);
  return r;
}

}  // namespace seqlab::infer
