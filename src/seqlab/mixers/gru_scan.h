// The GRU recurrence (mixers/gru.h; PyTorch gate order r, z, n) over a precomputed input side,
// from h = 0:
//
//   hh = W h_{t-1} + b                       xi [B,T,3D] (w_ih x + its bias), W [3D,D], b [3D]
//   r = sigmoid(xi_r + hh_r),  z = sigmoid(xi_z + hh_z),  n = tanh(xi_n + r hh_n)
//   h_t = n + z (h_{t-1} - n)                -> hs [B,T,D]
//
// gru_scan is one autograd node: forward takes three tensor calls a token (the recurrent matmul,
// one sigmoid for r and z, one tanh for n) around raw loops, keeping the gates and hh in
// [T,B,.] layouts so each token's slice is contiguous; backward runs the recurrence in reverse,
// one raw loop and one [B,3D] x [3D,D] product a token, then W's and b's gradients as one
// product and one sum over every token. gru_scan_reference is what GRUImpl ran before (tensor ops
// per token, autograd through each). The tests check values and every gradient of one against
// the other; SEQLAB_SCAN=reference (mixers/scan_common.h) selects the reference, and
// bench/fused_scan.sh times both.
#pragma once

#include <torch/torch.h>

namespace seqlab {

torch::Tensor gru_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                       const torch::Tensor& b_hh);

torch::Tensor gru_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                 const torch::Tensor& b_hh);

}  // namespace seqlab
