#include "seqlab/mixers/linear_scan.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/scan_common.h"

#include <ATen/Parallel.h>

namespace seqlab {

namespace {

// Rows b0..b1-1 of c_t = a_t c_{t-1} + b_t; a, b, c [Bn,T,D].
template <typename S>
void forward_rows(const S* a, const S* b, S* c, int64_t T, int64_t D, int64_t b0, int64_t b1) {
  for (int64_t r = b0; r < b1; ++r) {
    const int64_t base = r * T * D;
    for (int64_t d = 0; d < D; ++d) c[base + d] = b[base + d];
    for (int64_t t = 1; t < T; ++t) {
      const S* __restrict at = a + base + t * D;
      const S* __restrict bt = b + base + t * D;
      const S* __restrict prev = c + base + (t - 1) * D;
      S* __restrict ct = c + base + t * D;
      for (int64_t d = 0; d < D; ++d) ct[d] = at[d] * prev[d] + bt[d];
    }
  }
}

// Rows b0..b1-1 in reverse: gb_t = g_t = gc_t + a_{t+1} g_{t+1}, ga_t = g_t c_{t-1}.
template <typename S>
void backward_rows(const S* a, const S* c, const S* gc, S* ga, S* gb, int64_t T, int64_t D,
                   int64_t b0, int64_t b1) {
  for (int64_t r = b0; r < b1; ++r) {
    const int64_t base = r * T * D;
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t o = base + t * D;
      S* __restrict g = gb + o;
      const S* __restrict gct = gc + o;
      if (t + 1 < T) {
        const S* __restrict an = a + o + D;
        const S* __restrict gn = gb + o + D;
        for (int64_t d = 0; d < D; ++d) g[d] = gct[d] + an[d] * gn[d];
      } else {
        for (int64_t d = 0; d < D; ++d) g[d] = gct[d];
      }
      S* __restrict gat = ga + o;
      if (t > 0) {
        const S* __restrict prev = c + o - D;
        for (int64_t d = 0; d < D; ++d) gat[d] = g[d] * prev[d];
      } else {
        for (int64_t d = 0; d < D; ++d) gat[d] = 0;
      }
    }
  }
}

struct LinearScanFn : torch::autograd::Function<LinearScanFn> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    auto c = torch::empty_like(a);
    const int64_t T = a.size(1), D = a.size(2);
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "linear_scan_forward", [&] {
      const scalar_t *ap = a.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>();
      scalar_t* cp = c.data_ptr<scalar_t>();
      at::parallel_for(0, a.size(0), 1,
                       [&](int64_t b0, int64_t b1) { forward_rows(ap, bp, cp, T, D, b0, b1); });
    });
    ctx->save_for_backward({a, c});
    return c;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &a = saved[0], &c = saved[1];
    const auto gc = grad_out[0].contiguous();
    auto ga = torch::empty_like(a), gb = torch::empty_like(a);
    const int64_t T = a.size(1), D = a.size(2);
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "linear_scan_backward", [&] {
      const scalar_t *ap = a.data_ptr<scalar_t>(), *cp = c.data_ptr<scalar_t>();
      const scalar_t* gcp = gc.data_ptr<scalar_t>();
      scalar_t *gap = ga.data_ptr<scalar_t>(), *gbp = gb.data_ptr<scalar_t>();
      at::parallel_for(0, a.size(0), 1, [&](int64_t b0, int64_t b1) {
        backward_rows(ap, cp, gcp, gap, gbp, T, D, b0, b1);
      });
    });
    return {ga, gb};
  }
};

void check_shapes(const torch::Tensor& a, const torch::Tensor& b) {
  SEQLAB_CHECK(a.dim() == 3 && b.sizes() == a.sizes(),
               "linear_scan: a and b must be [B,T,D] of one shape");
}

}  // namespace

torch::Tensor linear_scan(const torch::Tensor& a, const torch::Tensor& b) {
  check_shapes(a, b);
  const auto type = a.scalar_type();
  const bool fused = a.device().is_cpu() && b.scalar_type() == type &&
                     (type == torch::kFloat || type == torch::kDouble);
  if (!fused || a.size(1) == 0 || scan_reference_requested()) return linear_scan_reference(a, b);
  return LinearScanFn::apply(a.contiguous(), b.contiguous());
}

torch::Tensor linear_scan_reference(const torch::Tensor& a, const torch::Tensor& b) {
  check_shapes(a, b);
  if (a.size(1) == 0) return torch::zeros_like(a);
  // unbind, not select(1, t): see mixer.h.
  const auto as = a.unbind(1), bs = b.unbind(1);
  std::vector<torch::Tensor> cs;
  cs.reserve(as.size());
  auto c = bs[0];
  cs.push_back(c);
  for (size_t t = 1; t < as.size(); ++t) {
    c = as[t] * c + bs[t];  // [B,D]
    cs.push_back(c);
  }
  return torch::stack(cs, 1);  // [B,T,D]
}

}  // namespace seqlab
