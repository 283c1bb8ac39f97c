#include "seqlab/mixers/elman_scan.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/scan_common.h"

namespace seqlab {

namespace {

struct ElmanScanFn : torch::autograd::Function<ElmanScanFn> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& xi,
                               const torch::Tensor& w_hh, const torch::Tensor& b_hh) {
    const int64_t B = xi.size(0), T = xi.size(1), D = w_hh.size(1);
    const auto X = xi.transpose(0, 1).contiguous();  // [T,B,D]
    auto H = torch::empty_like(X);
    const auto h0 = torch::zeros({B, D}, xi.options()), Wt = w_hh.t();
    for (int64_t t = 0; t < T; ++t) {
      auto h = H[t];
      at::addmm_out(h, b_hh, t > 0 ? H[t - 1] : h0, Wt);  // W h_{t-1} + b: [B,D]
      at::add_out(h, X[t], h);                            // xi_t + (W h_{t-1} + b), as before
      h.tanh_();
    }
    ctx->save_for_backward({w_hh, H});
    return H.transpose(0, 1).contiguous();  // [B,T,D]
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &w_hh = saved[0], &H = saved[1];
    const auto gy = grad_out[0].transpose(0, 1).contiguous();  // [T,B,D]
    const int64_t T = H.size(0), B = H.size(1), D = H.size(2);
    auto dPre = torch::empty_like(H);  // [T,B,D]
    auto dh = torch::zeros({B, D}, H.options());
    const float *hp = H.data_ptr<float>(), *gp = gy.data_ptr<float>();
    float *dp = dPre.data_ptr<float>(), *dhp = dh.data_ptr<float>();
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t o = t * B * D;
      for (int64_t i = 0; i < B * D; ++i)
        dp[o + i] = (gp[o + i] + dhp[i]) * (1.0f - hp[o + i] * hp[o + i]);
      if (t > 0) at::mm_out(dh, dPre[t], w_hh);  // dL/dh_{t-1}: [B,D]
    }
    auto H_prev = torch::cat({torch::zeros({1, B, D}, H.options()), H.narrow(0, 0, T - 1)}, 0);
    auto dW = torch::mm(dPre.reshape({T * B, D}).t(), H_prev.reshape({T * B, D}));
    return {dPre.transpose(0, 1), dW, dPre.sum(std::vector<int64_t>{0, 1})};
  }
};

}  // namespace

torch::Tensor elman_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                         const torch::Tensor& b_hh) {
  if (!matrix_scan_fused(xi, w_hh, b_hh, 1, "elman_scan"))
    return elman_scan_reference(xi, w_hh, b_hh);
  return ElmanScanFn::apply(xi, w_hh.contiguous(), b_hh.contiguous());
}

torch::Tensor elman_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                   const torch::Tensor& b_hh) {
  return reference_scan(xi, w_hh.size(1), [&](const torch::Tensor& xi_t, const torch::Tensor& h) {
    return torch::tanh(xi_t + torch::addmm(b_hh, h, w_hh.t()));  // [B,D]
  });
}

}  // namespace seqlab
