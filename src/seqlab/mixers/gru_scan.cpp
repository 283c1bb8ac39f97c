#include "seqlab/mixers/gru_scan.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/scan_common.h"

namespace seqlab {

namespace {

// One token's slices, all [B,.] and contiguous: x and hh [B,3D], act [B,3D] (r, z, n), h_prev and
// h [B,D].
struct Token {
  const float *x, *hh, *h_prev;
  float *act, *h;
};

// r and z pre-activations into act (the caller applies sigmoid to act[:, :2D]).
void gates_rz(const Token& k, int64_t B, int64_t D) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < 2 * D; ++j)
      k.act[b * 3 * D + j] = k.x[b * 3 * D + j] + k.hh[b * 3 * D + j];
}

// n's pre-activation xi_n + r hh_n into act (the caller applies tanh to act[:, 2D:]).
void gate_n(const Token& k, int64_t B, int64_t D) {
  for (int64_t b = 0; b < B; ++b) {
    const int64_t o = b * 3 * D;
    for (int64_t d = 0; d < D; ++d)
      k.act[o + 2 * D + d] = k.x[o + 2 * D + d] + k.act[o + d] * k.hh[o + 2 * D + d];
  }
}

void hidden(const Token& k, int64_t B, int64_t D) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) {
      const float z = k.act[b * 3 * D + D + d], n = k.act[b * 3 * D + 2 * D + d];
      k.h[b * D + d] = n + z * (k.h_prev[b * D + d] - n);
    }
}

// Token t in reverse: dh [B,D] is dL/dh_t from later tokens (gy_t added here); writes dxi_t and
// dhh_t [B,3D] and the direct part of dL/dh_{t-1}, dh_direct [B,D].
void token_backward(const Token& k, const float* gy, const float* dh, float* dxi, float* dhh,
                    float* dh_direct, int64_t B, int64_t D) {
  for (int64_t b = 0; b < B; ++b) {
    const int64_t o = b * 3 * D;
    for (int64_t d = 0; d < D; ++d) {
      const float r = k.act[o + d], z = k.act[o + D + d], n = k.act[o + 2 * D + d];
      const float dht = gy[b * D + d] + dh[b * D + d];
      const float dn_pre = dht * (1.0f - z) * (1.0f - n * n);
      const float dr_pre = dn_pre * k.hh[o + 2 * D + d] * r * (1.0f - r);
      const float dz_pre = dht * (k.h_prev[b * D + d] - n) * z * (1.0f - z);
      dxi[o + d] = dhh[o + d] = dr_pre;
      dxi[o + D + d] = dhh[o + D + d] = dz_pre;
      dxi[o + 2 * D + d] = dn_pre;
      dhh[o + 2 * D + d] = dn_pre * r;
      dh_direct[b * D + d] = dht * z;
    }
  }
}

struct GruScanFn : torch::autograd::Function<GruScanFn> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& xi,
                               const torch::Tensor& w_hh, const torch::Tensor& b_hh) {
    const int64_t B = xi.size(0), T = xi.size(1), D = w_hh.size(1);
    auto X = xi.transpose(0, 1).contiguous();  // [T,B,3D]
    auto HH = torch::empty_like(X), act = torch::empty_like(X);
    auto H = torch::empty({T, B, D}, xi.options()), h0 = torch::zeros({B, D}, xi.options());
    const auto Wt = w_hh.t();  // [D,3D]
    for (int64_t t = 0; t < T; ++t) {
      const auto h_prev = t > 0 ? H[t - 1] : h0;
      auto hh_t = HH[t];
      at::addmm_out(hh_t, b_hh, h_prev, Wt);  // [B,3D]
      const Token k{X[t].data_ptr<float>(), hh_t.data_ptr<float>(), h_prev.data_ptr<float>(),
                    act[t].data_ptr<float>(), H[t].data_ptr<float>()};
      gates_rz(k, B, D);
      act[t].narrow(1, 0, 2 * D).sigmoid_();
      gate_n(k, B, D);
      act[t].narrow(1, 2 * D, D).tanh_();
      hidden(k, B, D);
    }
    ctx->save_for_backward({w_hh, HH, act, H});
    return H.transpose(0, 1).contiguous();  // [B,T,D]
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &w_hh = saved[0], &HH = saved[1], &act = saved[2], &H = saved[3];
    const auto gy = grad_out[0].transpose(0, 1).contiguous();  // [T,B,D]
    const int64_t T = act.size(0), B = act.size(1), D = w_hh.size(1);
    auto dX = torch::empty_like(act), dHH = torch::empty_like(act);  // [T,B,3D]
    auto dh = torch::zeros({B, D}, act.options()), dh_direct = torch::empty_like(dh);
    const auto h0 = torch::zeros({B, D}, act.options());
    for (int64_t t = T - 1; t >= 0; --t) {
      const auto h_prev = t > 0 ? H[t - 1] : h0;
      const Token k{nullptr, HH[t].data_ptr<float>(), h_prev.data_ptr<float>(),
                    act[t].data_ptr<float>(), nullptr};
      token_backward(k, gy[t].data_ptr<float>(), dh.data_ptr<float>(), dX[t].data_ptr<float>(),
                     dHH[t].data_ptr<float>(), dh_direct.data_ptr<float>(), B, D);
      at::addmm_out(dh, dh_direct, dHH[t], w_hh);  // dL/dh_{t-1}: [B,D]
    }
    auto H_prev = torch::cat({h0.unsqueeze(0), H.narrow(0, 0, T - 1)}, 0);  // [T,B,D]
    auto dW = torch::mm(dHH.reshape({T * B, 3 * D}).t(), H_prev.reshape({T * B, D}));
    return {dX.transpose(0, 1), dW, dHH.sum(std::vector<int64_t>{0, 1})};
  }
};

}  // namespace

torch::Tensor gru_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                       const torch::Tensor& b_hh) {
  if (!matrix_scan_fused(xi, w_hh, b_hh, 3, "gru_scan")) return gru_scan_reference(xi, w_hh, b_hh);
  return GruScanFn::apply(xi, w_hh.contiguous(), b_hh.contiguous());
}

torch::Tensor gru_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                 const torch::Tensor& b_hh) {
  return reference_scan(xi, w_hh.size(1), [&](const torch::Tensor& xi_t, const torch::Tensor& h) {
    auto xg = xi_t.chunk(3, -1);                             // 3 x [B,D]: input side of r, z, n
    auto hg = torch::addmm(b_hh, h, w_hh.t()).chunk(3, -1);  // 3 x [B,D]: hidden side
    auto r = torch::sigmoid(xg[0] + hg[0]);                  // [B,D]
    auto z = torch::sigmoid(xg[1] + hg[1]);                  // [B,D]
    auto n = torch::tanh(xg[2] + r * hg[2]);                 // [B,D]
    return n + z * (h - n);                                  // [B,D]
  });
}

}  // namespace seqlab
