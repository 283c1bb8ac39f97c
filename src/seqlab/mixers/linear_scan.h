// The elementwise linear recurrence, from c_{-1} = 0:
//
//   c_t = a_t * c_{t-1} + b_t          a, b, c [B,T,D]
//
// QRNN's pooling is this with a = f and b = (1 - f) z (qrnn.h): the gates depend on the input only,
// so they are computed for every token at once and only this recurrence runs over T.
//
// linear_scan is one autograd node whose forward and backward are single loops over T on raw
// arrays, parallel over the batch; it saves its output c, and its backward runs
//
//   g_t = gc_t + a_{t+1} g_{t+1}       (dL/dc_t)
//   ga_t = g_t c_{t-1}                 gb_t = g_t
//
// linear_scan_reference is the same recurrence as tensor ops per token with autograd through
// each; the tests check values and gradients of one against the other. Inputs other than CPU float
// or double tensors of one dtype take the reference, and so does every call under
// SEQLAB_SCAN=reference (mixers/scan_common.h), which
// bench/fused_scan.sh uses to time both in one training run.
#pragma once

#include <torch/torch.h>

namespace seqlab {

torch::Tensor linear_scan(const torch::Tensor& a, const torch::Tensor& b);

torch::Tensor linear_scan_reference(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace seqlab
