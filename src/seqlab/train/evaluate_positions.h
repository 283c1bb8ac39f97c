// Perplexity by position within the window: how well a language model predicts token t of a
// window given the t tokens before it, for windows longer than it was trained on (length
// extrapolation: a recurrent model's state keeps working past its training length, a softmax
// model's learned positions or RoPE may not).
//
// The same windows as evaluate_lm (train/evaluate_lm.h): the split's first max_tokens tokens cut
// into consecutive windows of `context` predicted tokens, but only whole windows count, so every
// position has the same number of predictions. Positions 0 .. context-1 are grouped into buckets
// of `bucket` positions (the last may be shorter); each bucket reports its mean NLL and exp of it.
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/tasks/lm.h"

#include <vector>

namespace seqlab {

struct PositionBucket {
  int64_t lo = 0, hi = 0;  // positions [lo, hi) within the window (0 = the first prediction)
  int64_t tokens = 0;      // predictions scored in the bucket
  double nll = 0, ppl = 0;
};

// Throws seqlab::Error when the split holds less than one whole window, or context, batch or
// bucket is not positive.
std::vector<PositionBucket> evaluate_lm_positions(SeqModelImpl& model, const LmTask& task,
                                                  Split split, int64_t context, int64_t bucket,
                                                  int64_t batch, int64_t max_tokens = 0);

}  // namespace seqlab
