// Mamba's selective scan (mixers/mamba.h has the maths), from h = 0:
//
//   h_t = exp(delta_t A) * h_{t-1} + delta_t u_t B_t      h [B,E,N] per token
//   y_t = C_t . h_t                                       y [B,T,E] (without the skip term)
//
// u, delta [B,T,E]; A [E,N]; B, C [B,T,N].
//
// selective_scan is the training path: one autograd node whose forward and backward are single
// loops over T on raw arrays, parallel over the batch, with Abar = exp(delta A) computed in the
// loop (AVX2 + FMA where the CPU has them, N % 8 == 0 and float). Forward saves the state entering
// every segment of 16 tokens; backward recomputes each segment's states from there and runs the
// recurrence in reverse:
//
//   g_t = C_t gy_t + Abar_{t+1} g_{t+1}         (dL/dh_t)
//   gC_t = sum_e gy_te h_te          gB_tn = sum_e g_ten delta_te u_te
//   gu_te = delta_te sum_n g_ten B_tn
//   gdelta_te = sum_n g_ten (u_te B_tn + A_en Abar_ten h_{t-1,en})
//   gA_en = sum_{b,t} g_ten Abar_ten delta_te h_{t-1,en}
//
// It has no double backward. selective_scan_reference is the same recurrence as one tensor op per
// step with autograd through each (what Mamba ran before); the tests check values and every
// gradient of one against the other, and bench/fused_scan.sh times both in training runs
// (SEQLAB_SCAN=reference makes selective_scan run the reference; scan_common.h). Inputs
// other than CPU float or double tensors of one dtype also take the reference.
#pragma once

#include <torch/torch.h>

namespace seqlab {

torch::Tensor selective_scan(const torch::Tensor& u, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& B,
                             const torch::Tensor& C);

// One token of the recurrence on [B,E,N] tensors: updates h and returns y_t [B,E]. u_t and
// delta_t [B,E]; B_t and C_t [B,N]. Mamba's step() and the reference run it.
torch::Tensor selective_scan_step(const torch::Tensor& u_t, const torch::Tensor& delta_t,
                                  const torch::Tensor& B_t, const torch::Tensor& C_t,
                                  const torch::Tensor& A, torch::Tensor& h);

torch::Tensor selective_scan_reference(const torch::Tensor& u, const torch::Tensor& delta,
                                       const torch::Tensor& A, const torch::Tensor& B,
                                       const torch::Tensor& C);

namespace detail {
// Tests only: run the portable loops even where the AVX2 ones would (off by default).
void force_portable_selective_scan(bool on);
}  // namespace detail

}  // namespace seqlab
