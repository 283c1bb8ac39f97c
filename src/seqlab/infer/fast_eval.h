// Perplexity with the fast decoder: the protocol of train/evaluate_lm.h (seqlab eval's torch
// engine), with the logits of FastModel instead of SeqModel::forward, so that a weight format
// (f32 / bf16 / int8, issue 35) is scored on exactly the windows the torch engine scores.
//
// The token stream s_0 .. s_{n-1} (its first max_tokens tokens; 0 = all) is cut into consecutive
// windows of `context` predicted tokens: window w starts from a fresh state, reads
// s[wC .. wC+C) and predicts s[wC+1 .. wC+C] (C = context; the last window is shorter). Every
// token but the first is predicted once; nll sums -log softmax(logits)[target] over all V logits
// (a padded vocabulary's extra rows included, as cross_entropy does).
//
// Windows go through FastModel::step_batch `batch` at a time: one pass over the weights per
// position for all of them. step_batch equals step bitwise, so the batch size does not change the
// result, only the speed.
#pragma once

#include "seqlab/infer/fast_model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab::infer {

struct FastLmEval {
  double nll = 0;      // mean negative log-likelihood per predicted token (nats)
  double ppl = 0;      // exp(nll)
  int64_t tokens = 0;  // predicted (scored) tokens: min(n, max_tokens) - 1
};

// Throws seqlab::Error when the stream holds fewer than 2 tokens (`what` names it in the
// message), when context, batch or max_tokens are out of range, or when a token is outside the
// model's vocabulary (FastModel's own check). Not thread-safe (the model's scratch).
FastLmEval fast_perplexity(FastModel& model, const std::vector<int64_t>& stream, int64_t context,
                           int64_t batch, int64_t max_tokens, const std::string& what);

// -log softmax(logits [V])[target], in double over float logits (max-shifted).
double token_nll(const float* logits, int64_t V, int64_t target);

}  // namespace seqlab::infer
