#include "seqlab/mixers/lstm_scan.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/scan_common.h"

namespace seqlab {

namespace {

// Token t's cell update for every row, after the gates' sigmoids are in act [B,T,4D] (g still as
// sigmoid(2x)): g becomes 2 s - 1 in place, and C [B,T,D] gets c_t.
void cell_forward(float* act, const float* C_prev, float* C, int64_t B, int64_t T, int64_t D,
                  int64_t t) {
  for (int64_t b = 0; b < B; ++b) {
    float* a = act + (b * T + t) * 4 * D;
    const float* cp = C_prev ? C_prev + (b * T + t - 1) * D : nullptr;
    float* c = C + (b * T + t) * D;
    for (int64_t d = 0; d < D; ++d) {
      const float g = 2.0f * a[2 * D + d] - 1.0f;
      a[2 * D + d] = g;
      c[d] = a[D + d] * (cp ? cp[d] : 0.0f) + a[d] * g;
    }
  }
}

// h_t = o tanh(c_t) into H [B,T,D], given TC [B,T,D] = tanh(c).
void hidden_forward(const float* act, const float* TC, float* H, int64_t B, int64_t T, int64_t D,
                    int64_t t) {
  for (int64_t b = 0; b < B; ++b) {
    const float* o = act + (b * T + t) * 4 * D + 3 * D;
    const float* tc = TC + (b * T + t) * D;
    float* h = H + (b * T + t) * D;
    for (int64_t d = 0; d < D; ++d) h[d] = o[d] * tc[d];
  }
}

// Token t in reverse: dh [B,D] arrives as dL/dh_t from later tokens (gy_t is added here), dc [B,D]
// as dL/dc_t from later tokens and leaves as dL/dc_{t-1}; dPre [B,T,4D] gets the gates'
// pre-activation gradients.
void cell_backward(const float* act, const float* C, const float* TC, const float* gy,
                   const float* dh, float* dc, float* dPre, int64_t B, int64_t T, int64_t D,
                   int64_t t) {
  for (int64_t b = 0; b < B; ++b) {
    const int64_t bt = b * T + t;
    const float *a = act + bt * 4 * D, *tc = TC + bt * D, *g_y = gy + bt * D;
    const float* cp = t > 0 ? C + (bt - 1) * D : nullptr;
    float* dp = dPre + bt * 4 * D;
    for (int64_t d = 0; d < D; ++d) {
      const float i = a[d], f = a[D + d], g = a[2 * D + d], o = a[3 * D + d];
      const float dht = g_y[d] + dh[b * D + d];
      const float dct = dc[b * D + d] + dht * o * (1.0f - tc[d] * tc[d]);
      dp[d] = dct * g * i * (1.0f - i);
      dp[D + d] = (cp ? dct * cp[d] : 0.0f) * f * (1.0f - f);
      dp[2 * D + d] = dct * i * (1.0f - g * g);
      dp[3 * D + d] = dht * tc[d] * o * (1.0f - o);
      dc[b * D + d] = dct * f;
    }
  }
}

struct LstmScanFn : torch::autograd::Function<LstmScanFn> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& xi,
                               const torch::Tensor& w_hh, const torch::Tensor& b_hh) {
    const int64_t B = xi.size(0), T = xi.size(1), D = w_hh.size(1);
    // The g gate's pre-activation doubled, so one sigmoid gives sigmoid(2x) = (tanh x + 1) / 2:
    // the input side and W's g rows are scaled once here, not each token.
    auto scale = torch::ones({4 * D}, xi.options());
    scale.narrow(0, 2 * D, D).fill_(2.0f);
    auto pre_in = ((xi + b_hh) * scale).contiguous();  // [B,T,4D]: input side plus W's bias
    const auto Wt = (w_hh * scale.unsqueeze(1)).t();   // [D,4D]
    auto act = torch::empty_like(pre_in), C = torch::empty({B, T, D}, xi.options());
    auto TC = torch::empty_like(C), H = torch::empty_like(C);
    auto pre = torch::empty({B, 4 * D}, xi.options());
    for (int64_t t = 0; t < T; ++t) {
      if (t == 0)
        pre.copy_(pre_in.select(1, 0));
      else
        at::addmm_out(pre, pre_in.select(1, t), H.select(1, t - 1), Wt);  // [B,4D]
      auto act_t = act.select(1, t);
      at::sigmoid_out(act_t, pre);
      cell_forward(act.data_ptr<float>(), t > 0 ? C.data_ptr<float>() : nullptr,
                   C.data_ptr<float>(), B, T, D, t);
      auto tc_t = TC.select(1, t);
      at::tanh_out(tc_t, C.select(1, t));
      hidden_forward(act.data_ptr<float>(), TC.data_ptr<float>(), H.data_ptr<float>(), B, T, D, t);
    }
    ctx->save_for_backward({w_hh, act, C, TC, H});
    return H;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &w_hh = saved[0], &act = saved[1], &C = saved[2], &TC = saved[3], &H = saved[4];
    const auto gy = grad_out[0].contiguous();
    const int64_t B = act.size(0), T = act.size(1), D = w_hh.size(1);
    auto dPre = torch::empty_like(act);  // [B,T,4D]
    auto dh = torch::zeros({B, D}, act.options()), dc = torch::zeros_like(dh);
    for (int64_t t = T - 1; t >= 0; --t) {
      cell_backward(act.data_ptr<float>(), C.data_ptr<float>(), TC.data_ptr<float>(),
                    gy.data_ptr<float>(), dh.data_ptr<float>(), dc.data_ptr<float>(),
                    dPre.data_ptr<float>(), B, T, D, t);
      if (t > 0) at::mm_out(dh, dPre.select(1, t), w_hh);  // dL/dh_{t-1}: [B,D]
    }
    // h_{t-1} for every token (zeros before the first): W's gradient in one product.
    auto H_prev = torch::cat({torch::zeros({B, 1, D}, H.options()), H.narrow(1, 0, T - 1)}, 1);
    auto dW = torch::mm(dPre.reshape({B * T, 4 * D}).t(), H_prev.reshape({B * T, D}));
    return {dPre, dW, dPre.sum(std::vector<int64_t>{0, 1})};
  }
};

}  // namespace

torch::Tensor lstm_scan(const torch::Tensor& xi, const torch::Tensor& w_hh,
                        const torch::Tensor& b_hh) {
  if (!matrix_scan_fused(xi, w_hh, b_hh, 4, "lstm_scan"))
    return lstm_scan_reference(xi, w_hh, b_hh);
  return LstmScanFn::apply(xi, w_hh.contiguous(), b_hh);
}

torch::Tensor lstm_scan_reference(const torch::Tensor& xi, const torch::Tensor& w_hh,
                                  const torch::Tensor& b_hh) {
  const int64_t B = xi.size(0), D = w_hh.size(1);
  auto h = torch::zeros({B, D}, xi.options()), c = torch::zeros({B, D}, xi.options());
  std::vector<torch::Tensor> hs;
  hs.reserve(xi.size(1));
  for (const auto& xi_t : xi.unbind(1)) {  // unbind, not select: see mixer.h
    auto g = (xi_t + torch::addmm(b_hh, h, w_hh.t())).chunk(4, -1);  // 4 x [B,D]: i, f, g, o
    c = torch::sigmoid(g[1]) * c + torch::sigmoid(g[0]) * torch::tanh(g[2]);  // [B,D]
    h = torch::sigmoid(g[3]) * torch::tanh(c);                                // [B,D]
    hs.push_back(h);
  }
  return hs.empty() ? torch::zeros({B, 0, D}, xi.options()) : torch::stack(hs, 1);  // [B,T,D]
}

}  // namespace seqlab
