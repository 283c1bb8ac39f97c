#include "seqlab/mixers/selective_scan.h"

#include "seqlab/core/error.h"
#include "seqlab/core/simd_avx2.h"
#include "seqlab/mixers/scan_common.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

namespace seqlab {

namespace {

// Forward saves h at the start of every segment of this many tokens; backward recomputes a
// segment's states from its checkpoint into a buffer of kSegment x [E,N] (256 KiB at E = 256,
// N = 16: cache-resident) and sweeps it in reverse. Saving every h_t instead ([B,T,E,N], 64 MiB a
// layer for an MQAR cell of T = 256) cost more in page faults and copies than the recompute.
constexpr int64_t kSegment = 16;

template <typename S>
struct Scan {
  const S *u, *dl, *A, *B, *C;  // [Bn,T,E], [Bn,T,E], [E,N], [Bn,T,N], [Bn,T,N]
  int64_t Bn, T, E, N;
  int64_t segments() const { return (T + kSegment - 1) / kSegment; }
};

template <typename S>
Scan<S> make_scan(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                  const torch::Tensor& B, const torch::Tensor& C) {
  return {u.data_ptr<S>(), delta.data_ptr<S>(), A.data_ptr<S>(), B.data_ptr<S>(), C.data_ptr<S>(),
          u.size(0),       u.size(1),           u.size(2),       A.size(1)};
}

// Token bt (= b T + t): hout = Abar hin + delta u B_t, y[bt] = C_t . hout (y nullable). hin may be
// hout. The portable loop: exp per element.
template <typename S>
void token_forward(const Scan<S>& s, int64_t bt, const S* hin, S* hout, S* y) {
  const int64_t E = s.E, N = s.N;
  const S *Bt = s.B + bt * N, *Ct = s.C + bt * N;
  for (int64_t e = 0; e < E; ++e) {
    const S d = s.dl[bt * E + e], du = d * s.u[bt * E + e];
    S acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t i = e * N + n;
      const S h = std::exp(d * s.A[i]) * hin[i] + du * Bt[n];
      hout[i] = h;
      acc += h * Ct[n];
    }
    if (y) y[bt * E + e] = acc;
  }
}

// Token bt in reverse (the header has the maths): g [E,N] holds dL/dh_t from the tokens after t
// on entry and dL/dh_{t-1} on exit; Ht and Hp are h_t and h_{t-1}; gA [E,N] accumulates.
template <typename S>
void token_backward(const Scan<S>& s, int64_t bt, const S* Ht, const S* Hp, const S* gy, S* g,
                    S* gA, S* gu, S* gdl, S* gB, S* gC) {
  const int64_t E = s.E, N = s.N;
  const S *Bt = s.B + bt * N, *Ct = s.C + bt * N;
  S *gBt = gB + bt * N, *gCt = gC + bt * N;
  std::fill(gBt, gBt + N, S(0));
  std::fill(gCt, gCt + N, S(0));
  for (int64_t e = 0; e < E; ++e) {
    const S gye = gy[bt * E + e], d = s.dl[bt * E + e], ue = s.u[bt * E + e], du = d * ue;
    S sum_gB = 0, sum_gA = 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t i = e * N + n;
      gCt[n] += gye * Ht[i];
      const S gn = g[i] + gye * Ct[n];  // dL/dh_t
      sum_gB += gn * Bt[n];
      gBt[n] += gn * du;
      const S a = std::exp(d * s.A[i]);
      const S q = gn * a * Hp[i];  // dL/d(delta_te A_en)
      sum_gA += q * s.A[i];
      gA[i] += q * d;
      g[i] = gn * a;  // dL/dh_{t-1} from this step
    }
    gu[bt * E + e] = sum_gB * d;
    gdl[bt * E + e] = sum_gB * ue + sum_gA;
  }
}

// The same two loops in AVX2 + FMA for float with N a multiple of 8: exp by simd::exp256 and the
// sums over n in 8 lanes.
__attribute__((target("avx2,fma"))) void token_forward_avx2(const Scan<float>& s, int64_t bt,
                                                            const float* hin, float* hout,
                                                            float* y) {
  const int64_t E = s.E, N = s.N;
  const float *Bt = s.B + bt * N, *Ct = s.C + bt * N;
  for (int64_t e = 0; e < E; ++e) {
    const float d = s.dl[bt * E + e];
    const __m256 dv = _mm256_set1_ps(d), duv = _mm256_set1_ps(d * s.u[bt * E + e]);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t n = 0; n < N; n += 8) {
      const int64_t i = e * N + n;
      const __m256 a = simd::exp256(_mm256_mul_ps(dv, _mm256_loadu_ps(s.A + i)));
      const __m256 h =
          _mm256_fmadd_ps(a, _mm256_loadu_ps(hin + i), _mm256_mul_ps(duv, _mm256_loadu_ps(Bt + n)));
      _mm256_storeu_ps(hout + i, h);
      acc = _mm256_fmadd_ps(h, _mm256_loadu_ps(Ct + n), acc);
    }
    if (y) y[bt * E + e] = simd::hsum256(acc);
  }
}

__attribute__((target("avx2,fma"))) void token_backward_avx2(const Scan<float>& s, int64_t bt,
                                                             const float* Ht, const float* Hp,
                                                             const float* gy, float* g, float* gA,
                                                             float* gu, float* gdl, float* gB,
                                                             float* gC) {
  const int64_t E = s.E, N = s.N;
  const float *Bt = s.B + bt * N, *Ct = s.C + bt * N;
  float *gBt = gB + bt * N, *gCt = gC + bt * N;
  std::fill(gBt, gBt + N, 0.0f);
  std::fill(gCt, gCt + N, 0.0f);
  for (int64_t e = 0; e < E; ++e) {
    const float gye = gy[bt * E + e], d = s.dl[bt * E + e], ue = s.u[bt * E + e];
    const __m256 gyv = _mm256_set1_ps(gye), dv = _mm256_set1_ps(d), duv = _mm256_set1_ps(d * ue);
    __m256 sB = _mm256_setzero_ps(), sA = _mm256_setzero_ps();
    for (int64_t n = 0; n < N; n += 8) {
      const int64_t i = e * N + n;
      _mm256_storeu_ps(gCt + n,
                       _mm256_fmadd_ps(gyv, _mm256_loadu_ps(Ht + i), _mm256_loadu_ps(gCt + n)));
      const __m256 gn =
          _mm256_fmadd_ps(gyv, _mm256_loadu_ps(Ct + n), _mm256_loadu_ps(g + i));  // dL/dh_t
      sB = _mm256_fmadd_ps(gn, _mm256_loadu_ps(Bt + n), sB);
      _mm256_storeu_ps(gBt + n, _mm256_fmadd_ps(gn, duv, _mm256_loadu_ps(gBt + n)));
      const __m256 Av = _mm256_loadu_ps(s.A + i);
      const __m256 a = simd::exp256(_mm256_mul_ps(dv, Av));
      const __m256 q = _mm256_mul_ps(_mm256_mul_ps(gn, a), _mm256_loadu_ps(Hp + i));
      sA = _mm256_fmadd_ps(q, Av, sA);
      _mm256_storeu_ps(gA + i, _mm256_fmadd_ps(q, dv, _mm256_loadu_ps(gA + i)));
      _mm256_storeu_ps(g + i, _mm256_mul_ps(gn, a));  // dL/dh_{t-1} from this step
    }
    const float sum_gB = simd::hsum256(sB);
    gu[bt * E + e] = sum_gB * d;
    gdl[bt * E + e] = sum_gB * ue + simd::hsum256(sA);
  }
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

std::atomic<bool> g_force_portable{false};

// Which loops run: AVX2 for float with N a multiple of 8 where the CPU has AVX2 + FMA.
template <typename S>
bool use_avx2(int64_t N) {
  return std::is_same_v<S, float> && N % 8 == 0 && cpu_has_avx2_fma() && !g_force_portable;
}

template <typename S>
void step_forward(bool avx2, const Scan<S>& s, int64_t bt, const S* hin, S* hout, S* y) {
  if constexpr (std::is_same_v<S, float>)
    if (avx2) return token_forward_avx2(s, bt, hin, hout, y);
  token_forward(s, bt, hin, hout, y);
}

template <typename S>
void step_backward(bool avx2, const Scan<S>& s, int64_t bt, const S* Ht, const S* Hp, const S* gy,
                   S* g, S* gA, S* gu, S* gdl, S* gB, S* gC) {
  if constexpr (std::is_same_v<S, float>)
    if (avx2) return token_backward_avx2(s, bt, Ht, Hp, gy, g, gA, gu, gdl, gB, gC);
  token_backward(s, bt, Ht, Hp, gy, g, gA, gu, gdl, gB, gC);
}

// Rows b0..b1-1 forward: y [Bn,T,E]; ckpt [Bn,segments,E,N] (nullable) receives the state that
// enters each segment (zeros for the first).
template <typename S>
void forward_rows(const Scan<S>& s, int64_t b0, int64_t b1, S* y, S* ckpt) {
  const int64_t EN = s.E * s.N;
  const bool avx2 = use_avx2<S>(s.N);
  std::vector<S> h(EN);
  for (int64_t b = b0; b < b1; ++b) {
    std::fill(h.begin(), h.end(), S(0));
    for (int64_t t = 0; t < s.T; ++t) {
      if (ckpt && t % kSegment == 0)
        std::memcpy(ckpt + (b * s.segments() + t / kSegment) * EN, h.data(), sizeof(S) * EN);
      step_forward(avx2, s, b * s.T + t, h.data(), h.data(), y);
    }
  }
}

// Rows b0..b1-1 in reverse, one segment at a time: its states recomputed from the checkpoint,
// then swept back. gA_part [Bn,E,N] accumulates per row (summed over rows by the caller).
template <typename S>
void backward_rows(const Scan<S>& s, const S* ckpt, const S* gy, int64_t b0, int64_t b1, S* gu,
                   S* gdl, S* gA_part, S* gB, S* gC) {
  const int64_t EN = s.E * s.N;
  const bool avx2 = use_avx2<S>(s.N);
  std::vector<S> seg(kSegment * EN), g(EN);
  for (int64_t b = b0; b < b1; ++b) {
    std::fill(g.begin(), g.end(), S(0));
    for (int64_t k = s.segments() - 1; k >= 0; --k) {
      const int64_t t0 = k * kSegment, t1 = std::min(s.T, t0 + kSegment);
      const S* h0 = ckpt + (b * s.segments() + k) * EN;  // h_{t0-1}
      auto state = [&](int64_t t) { return t < t0 ? h0 : seg.data() + (t - t0) * EN; };
      for (int64_t t = t0; t < t1; ++t)
        step_forward<S>(avx2, s, b * s.T + t, state(t - 1), seg.data() + (t - t0) * EN, nullptr);
      for (int64_t t = t1 - 1; t >= t0; --t)
        step_backward<S>(avx2, s, b * s.T + t, state(t), state(t - 1), gy, g.data(),
                         gA_part + b * EN, gu, gdl, gB, gC);
    }
  }
}

// y [Bn,T,E]; ckpt [Bn,segments,E,N] when given.
void run_forward(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                 const torch::Tensor& B, const torch::Tensor& C, torch::Tensor& y,
                 torch::Tensor* ckpt) {
  AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "selective_scan_forward", [&] {
    const auto s = make_scan<scalar_t>(u, delta, A, B, C);
    scalar_t* yp = y.data_ptr<scalar_t>();
    scalar_t* cp = ckpt ? ckpt->data_ptr<scalar_t>() : nullptr;
    at::parallel_for(0, s.Bn, 1, [&](int64_t b0, int64_t b1) { forward_rows(s, b0, b1, yp, cp); });
  });
}

// The gradients {u, delta, A, B, C} given the checkpoints and gy [Bn,T,E].
torch::autograd::tensor_list run_backward(const torch::Tensor& u, const torch::Tensor& delta,
                                          const torch::Tensor& A, const torch::Tensor& B,
                                          const torch::Tensor& C, const torch::Tensor& ckpt,
                                          const torch::Tensor& gy) {
  auto gu = torch::empty_like(u), gdl = torch::empty_like(delta);
  auto gB = torch::empty_like(B), gC = torch::empty_like(C);
  auto gA_part = torch::zeros({u.size(0), A.size(0), A.size(1)}, u.options());
  AT_DISPATCH_FLOATING_TYPES(u.scalar_type(), "selective_scan_backward", [&] {
    const auto s = make_scan<scalar_t>(u, delta, A, B, C);
    const scalar_t *cp = ckpt.data_ptr<scalar_t>(), *gyp = gy.data_ptr<scalar_t>();
    scalar_t *gup = gu.data_ptr<scalar_t>(), *gdp = gdl.data_ptr<scalar_t>();
    scalar_t *gAp = gA_part.data_ptr<scalar_t>(), *gBp = gB.data_ptr<scalar_t>();
    scalar_t* gCp = gC.data_ptr<scalar_t>();
    at::parallel_for(0, s.Bn, 1, [&](int64_t b0, int64_t b1) {
      backward_rows(s, cp, gyp, b0, b1, gup, gdp, gAp, gBp, gCp);
    });
  });
  return {gu, gdl, gA_part.sum(0), gB, gC};
}

struct SelectiveScanFn : torch::autograd::Function<SelectiveScanFn> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& u,
                               const torch::Tensor& delta, const torch::Tensor& A,
                               const torch::Tensor& B, const torch::Tensor& C) {
    auto y = torch::empty_like(u);
    const int64_t segments = (u.size(1) + kSegment - 1) / kSegment;
    auto ckpt = torch::empty({u.size(0), segments, u.size(2), A.size(1)}, u.options());
    run_forward(u, delta, A, B, C, y, &ckpt);
    ctx->save_for_backward({u, delta, A, B, C, ckpt});
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    return run_backward(saved[0], saved[1], saved[2], saved[3], saved[4], saved[5],
                        grad_out[0].contiguous());
  }
};

void check_shapes(const torch::Tensor& u, const torch::Tensor& delta, const torch::Tensor& A,
                  const torch::Tensor& B, const torch::Tensor& C) {
  SEQLAB_CHECK(u.dim() == 3 && delta.sizes() == u.sizes(),
               "selective_scan: u and delta must be [B,T,E] of one shape");
  SEQLAB_CHECK(A.dim() == 2 && A.size(0) == u.size(2), "selective_scan: A must be [E,N]");
  const std::vector<int64_t> bn = {u.size(0), u.size(1), A.size(1)};
  SEQLAB_CHECK(B.sizes() == bn && C.sizes() == bn, "selective_scan: B and C must be [B,T,N]");
}

}  // namespace

torch::Tensor selective_scan(const torch::Tensor& u, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& B,
                             const torch::Tensor& C) {
  check_shapes(u, delta, A, B, C);
  const auto type = u.scalar_type();
  const bool fused = u.device().is_cpu() && (type == torch::kFloat || type == torch::kDouble) &&
                     delta.scalar_type() == type && A.scalar_type() == type &&
                     B.scalar_type() == type && C.scalar_type() == type;
  if (!fused || u.size(1) == 0 || scan_reference_requested())
    return selective_scan_reference(u, delta, A, B, C);
  const auto uc = u.contiguous(), dc = delta.contiguous(), Ac = A.contiguous();
  const auto Bc = B.contiguous(), Cc = C.contiguous();
  const bool grad = torch::GradMode::is_enabled() &&
                    (u.requires_grad() || delta.requires_grad() || A.requires_grad() ||
                     B.requires_grad() || C.requires_grad());
  if (grad) return SelectiveScanFn::apply(uc, dc, Ac, Bc, Cc);
  auto y = torch::empty_like(uc);
  run_forward(uc, dc, Ac, Bc, Cc, y, nullptr);
  return y;
}

torch::Tensor selective_scan_step(const torch::Tensor& u_t, const torch::Tensor& delta_t,
                                  const torch::Tensor& B_t, const torch::Tensor& C_t,
                                  const torch::Tensor& A, torch::Tensor& h) {
  auto da = torch::exp(delta_t.unsqueeze(-1) * A);              // [B,E,N]: Abar
  auto dbu = (delta_t * u_t).unsqueeze(-1) * B_t.unsqueeze(1);  // [B,E,N]: Bbar u
  h = da * h + dbu;                                             // [B,E,N]
  return (h * C_t.unsqueeze(1)).sum(-1);                        // [B,E]
}

torch::Tensor selective_scan_reference(const torch::Tensor& u, const torch::Tensor& delta,
                                       const torch::Tensor& A, const torch::Tensor& B,
                                       const torch::Tensor& C) {
  check_shapes(u, delta, A, B, C);
  const int64_t T = u.size(1);
  auto h = torch::zeros({u.size(0), u.size(2), A.size(1)}, u.options());  // [B,E,N]
  // unbind, not select(1, t), as mixer.h explains: the per-step ops stay on [B,E,N].
  const auto us = u.unbind(1), ds = delta.unbind(1), bs = B.unbind(1), cs = C.unbind(1);
  std::vector<torch::Tensor> ys;
  ys.reserve(T);
  for (int64_t t = 0; t < T; ++t)
    ys.push_back(selective_scan_step(us[t], ds[t], bs[t], cs[t], A, h));  // [B,E]
  return T ? torch::stack(ys, 1) : torch::zeros_like(u);                  // [B,T,E]
}

namespace detail {
void force_portable_selective_scan(bool on) {
  g_force_portable = on;
}
}  // namespace detail

}  // namespace seqlab
