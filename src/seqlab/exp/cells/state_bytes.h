// The memory a model's recurrent state holds: what "state size" means in the suites' rows (the
// conversion benchmarks' state memory, MQAR's accuracy against state size).
#pragma once

#include "seqlab/model/model.h"

#include <cstdint>

namespace seqlab {

// Bytes of `s` as SeqModel::step left it: every layer's tensors, except that a softmax layer's
// preallocated KV cache counts only its filled part (2 × heads × head width × tokens so far).
int64_t model_state_bytes(const ModelState& s);

// The state of `model` after reading `tokens` [1,T] one at a time (SeqModel::step, no gradient):
// model_state_bytes of what it holds then.
int64_t state_bytes_after(SeqModelImpl& model, const torch::Tensor& tokens);

}  // namespace seqlab
