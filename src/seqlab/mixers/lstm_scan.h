// The LSTM recurrence (mixers/lstm.h; PyTorch gate order i, f, g, o) over a precomputed input
// side, from h = c = 0:
//
//   [i f g o] = xi_t + W h_{t-1} + b          xi [B,T,4D] (w_ih x + its bias), W [4D,D], b [4D]
//   i, f, o = sigmoid(.), g = tanh(.)
//   c_t = f c_{t-1} + i g,   h_t = o tanh(c_t)   -> hs [B,T,D]
//
// lstm_scan is one autograd node: forward takes three tensor calls a token (the recurrent matmul,
// the gates' sigmoid, tanh(c)) and two raw loops, keeping the gates, c_t and tanh(c_t);
// backward runs the recurrence in reverse in one raw loop and one [B,4D] x [4D,D] product a
// token, then W's and b's gradients as one product and one sum over every token. g is computed
// as 2 sigmoid(2x) - 1 (= tanh x) so that one sigmoid call covers all four gates.
// lstm_scan_reference is what LSTMImpl ran before: tensor ops per token, autograd through each.
// The tests check values and every gradient of one against the other; SEQLAB_SCAN=reference
// (mixers/linear_scan.h) selects the reference, and bench/fused_scan.sh times both.
#pragma once

#include <torch/torch.h>

namespace seqlab {

torch::Tensor lstm_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                        const torch::Tensor& b_hh);

torch::Tensor lstm_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                  const torch::Tensor& b_hh);

}  // namespace seqlab
