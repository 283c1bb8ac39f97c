// Perplexity of a language model on a split of an lm task's corpus.
//
// The split's token stream s_0 .. s_{n-1} (its first max_tokens tokens; 0 = all) is cut into
// consecutive windows of `context` predicted tokens: window w reads s[wC .. wC+C) and predicts
// s[wC+1 .. wC+C] (C = context; the last window is shorter). Every token but the first is
// predicted exactly once, from at most C tokens of context that start at a window boundary, so
// the n - 1 predictions are scored with no overlap and no token counted twice. This is the
// standard non-overlapping evaluation; a sliding window would give lower (better) numbers.
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/tasks/lm.h"

namespace seqlab {

struct LmEvalResult {
  double nll = 0;      // mean negative log-likelihood per predicted token (nats)
  double ppl = 0;      // exp(nll)
  int64_t tokens = 0;  // predicted (scored) tokens: min(n, max_tokens) - 1
};

// Runs in eval mode without gradients, `batch` windows per forward ([batch, context, vocab]
// logits at a time); restores the model's training mode. Throws seqlab::Error when the split
// holds fewer than 2 tokens or context / batch are not positive; the model itself rejects a
// context longer than its learned positions.
LmEvalResult evaluate_lm(SeqModelImpl& model, const LmTask& task, Split split, int64_t context,
                         int64_t batch, int64_t max_tokens = 0);

}  // namespace seqlab
