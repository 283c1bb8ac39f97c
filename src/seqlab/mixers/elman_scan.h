// The Elman recurrence (mixers/elman.h) over a precomputed input side, from h = 0:
//
//   h_t = tanh(xi_t + W h_{t-1} + b)          xi [B,T,D] (w_ih x + its bias), W [D,D], b [D]
//
// elman_scan is one autograd node: three tensor calls a token forward (the recurrent matmul, the
// add, tanh) in a [T,B,D] layout so each token's slice is contiguous; backward one raw loop and
// one [B,D] x [D,D] product a token, then W's and b's gradients as one product and one sum over
// every token. elman_scan_reference is what ElmanImpl ran before (tensor ops per token, autograd
// through each), bitwise the same forward. The tests check values and every gradient of one
// against the other; SEQLAB_SCAN=reference (mixers/scan_common.h) selects the reference, and
// bench/fused_scan.sh times both.
#pragma once

#include <torch/torch.h>

namespace seqlab {

torch::Tensor elman_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                         const torch::Tensor& b_hh);

torch::Tensor elman_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                   const torch::Tensor& b_hh);

}  // namespace seqlab
