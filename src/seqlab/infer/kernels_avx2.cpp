// The AVX2 + FMA and scalar loops behind infer/kernels.h's dispatch (internal: kernels_avx2.h).
// Each function is the body of one kernel; kernels.cpp picks scalar or AVX2 per call.
#include "seqlab/infer/kernels_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace seqlab::infer::detail {

std::atomic<bool> g_vecmat_narrow{true};

void matvec_scalar(const float* W, const float* bias, const float* x, float* y, int64_t rows,
                   int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = W + r * cols;
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) s += w[c] * x[c];
    y[r] = s + (bias ? bias[r] : 0.0f);
  }
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 8), _mm256_loadu_ps(b + c + 8), s1);
  }
  for (; c + 8 <= n; c += 8)
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
  float s = hsum256(_mm256_add_ps(s0, s1));
  for (; c < n; ++c) s += a[c] * b[c];
  return s;
}

// One row at a time (row_dots, kernels_avx2.h).
__attribute__((target("avx2,fma"))) void matvec_avx2(const float* W, const float* bias,
                                                     const float* x, float* y, int64_t rows,
                                                     int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float s;
    row_dots<1>(W + r * cols, &x, cols, &s);
    y[r] = s + (bias ? bias[r] : 0.0f);
  }
}

__attribute__((target("avx2,fma"))) void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

// GELU over 8 lanes, the erf form: erf by Abramowitz & Stegun 7.1.26 (absolute error below
// 1.5e-7), erf(a) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-a^2), t = 1 / (1 + p a),
// a = |z|. The scalar path calls std::erf 6 ns a value: 1024-wide MLPs spent ~25 us a token of a
// 4-layer model there, 13% of the whole step at d_model 256.
__attribute__((target("avx2,fma"))) void gelu_avx2(float* x, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f),
               rsqrt2 = _mm256_set1_ps(0.70710678118654752f), p = _mm256_set1_ps(0.3275911f),
               sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i), z = _mm256_mul_ps(v, rsqrt2);
    const __m256 a = _mm256_andnot_ps(sign, z);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(p, a, one));
    __m256 q = _mm256_set1_ps(1.061405429f);
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-1.453152027f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.421413741f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-0.284496736f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(0.254829592f));
    q = _mm256_mul_ps(q, t);
    const __m256 e = exp256(_mm256_mul_ps(_mm256_xor_ps(a, sign), a));  // exp(-a^2)
    const __m256 erf_a = _mm256_fnmadd_ps(q, e, one);
    const __m256 erf_z = _mm256_or_ps(erf_a, _mm256_and_ps(sign, z));  // sign(z) erf(|z|)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf_z)));
  }
  for (; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

// GELU's tanh form (GPT-2's gelu_new) over 8 lanes: tanh(u) = 1 - 2 / (exp(2u) + 1), exp256
// clamping 2u to the fp32 range so that tanh saturates at +-1 instead of overflowing.
__attribute__((target("avx2,fma"))) void gelu_tanh_avx2(float* x, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f),
               k = _mm256_set1_ps(0.7978845608028654f), c = _mm256_set1_ps(0.044715f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 u = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v));
    const __m256 e = exp256(_mm256_add_ps(u, u));
    const __m256 th = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, th)));
  }
  constexpr float kk = 0.7978845608028654f;
  for (; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::tanh(kk * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

// LayerNorm over 8 lanes: mean and variance summed in fp32 lanes (two passes, as the scalar path),
// then one fused pass for the output.
__attribute__((target("avx2,fma"))) void layer_norm_avx2(const float* x, const float* gamma,
                                                         const float* beta, float* y, int64_t n,
                                                         double eps) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
  double sum = hsum256(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) sum += x[i];
  const float m = static_cast<float>(sum / static_cast<double>(n));
  const __m256 mv = _mm256_set1_ps(m);
  s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv),
                 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mv);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
    s1 = _mm256_fmadd_ps(d1, d1, s1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    s0 = _mm256_fmadd_ps(d0, d0, s0);
  }
  double var = hsum256(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) var += (x[i] - m) * (x[i] - m);
  var /= static_cast<double>(n);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const __m256 iv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    _mm256_storeu_ps(y + i,
                     _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma + i), _mm256_loadu_ps(beta + i)));
  }
  for (; i < n; ++i) y[i] = (x[i] - m) * inv * gamma[i] + beta[i];
}

// RMSNorm over 8 lanes: the mean square summed in fp32 lanes, then y = gamma * (x * inv), the
// order model/norm.cpp multiplies in.
__attribute__((target("avx2,fma"))) void rms_norm_avx2(const float* x, const float* gamma, float* y,
                                                       int64_t n, double eps) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    s0 = _mm256_fmadd_ps(a, a, s0);
    s1 = _mm256_fmadd_ps(b, b, s1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i);
    s0 = _mm256_fmadd_ps(a, a, s0);
  }
  double ss = hsum256(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) ss += x[i] * x[i];
  const float ms = static_cast<float>(ss / static_cast<double>(n));
  const float inv = 1.0f / std::sqrt(ms + static_cast<float>(eps));
  const __m256 iv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(gamma + i),
                                          _mm256_mul_ps(_mm256_loadu_ps(x + i), iv)));
  for (; i < n; ++i) y[i] = gamma[i] * (x[i] * inv);
}

// silu(g) * u over 8 lanes: g / (1 + exp(-g)), exp256 clamping -g to the fp32 range (so a very
// negative g gives a tiny value, not 0 / inf).
__attribute__((target("avx2,fma"))) void silu_mul_avx2(const float* g, const float* u, float* out,
                                                       int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(g + i);
    const __m256 e = exp256(_mm256_xor_ps(a, sign));  // exp(-a)
    const __m256 s = _mm256_div_ps(a, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// One selective-scan channel, 8 states at a time; the tail (N not a multiple of 8) as the scalar
// twin does it.
__attribute__((target("avx2,fma"))) float scan_channel_avx2(const float* a, float dl, float du,
                                                            const float* B, const float* C,
                                                            float* h, int64_t N) {
  const __m256 vdl = _mm256_set1_ps(dl), vdu = _mm256_set1_ps(du);
  __m256 acc = _mm256_setzero_ps();
  int64_t n = 0;
  for (; n + 8 <= N; n += 8) {
    const __m256 decay = exp256(_mm256_mul_ps(vdl, _mm256_loadu_ps(a + n)));
    const __m256 hn =
        _mm256_fmadd_ps(decay, _mm256_loadu_ps(h + n), _mm256_mul_ps(vdu, _mm256_loadu_ps(B + n)));
    _mm256_storeu_ps(h + n, hn);
    acc = _mm256_fmadd_ps(hn, _mm256_loadu_ps(C + n), acc);
  }
  float sum = hsum256(acc);
  for (; n < N; ++n) {
    h[n] = std::exp(dl * a[n]) * h[n] + du * B[n];
    sum += h[n] * C[n];
  }
  return sum;
}

__attribute__((target("avx2,fma"))) void rope_rotate_avx2(float* x, const float* cos,
                                                          const float* sin, int64_t half) {
  float* x2 = x + half;
  int64_t i = 0;
  for (; i + 8 <= half; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x2 + i);
    const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
    _mm256_storeu_ps(x + i, _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s)));
    _mm256_storeu_ps(x2 + i, _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s)));
  }
  for (; i < half; ++i) {
    const float a = x[i], b = x2[i];
    x[i] = a * cos[i] - b * sin[i];
    x2[i] = b * cos[i] + a * sin[i];
  }
}

// In-place softmax over n values, 8 lanes at a time.
__attribute__((target("avx2,fma"))) void softmax_avx2(float* x, int64_t n) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  const __m256 mv = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  double s = hsum256(acc);
  for (; i < n; ++i) s += (x[i] = std::exp(x[i] - mx));
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / s));
  i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (; i < n; ++i) x[i] *= static_cast<float>(1.0 / s);
}

// y[c] = sum_r p[r] M[r, c]: 8 columns at a time, the rows streamed once per column block.
// vecmat for narrow rows (cols = 8 K, K <= 8: attention heads of width 8..64): one pass over M
// with all K accumulators in registers, K independent FMA chains per row. Each column still sums
// its rows in order in one lane, so the result is bitwise that of the general loop below, which
// makes one pass per 16 columns with two chains (4 strided passes over the values for a 64-wide
// head, latency-bound).
template <int K>
static __attribute__((target("avx2,fma"))) void vecmat_narrow_avx2(const float* M, const float* p,
                                                                   float* y, int64_t rows) {
  constexpr int64_t cols = 8 * K;
  __m256 a[K];
  for (int k = 0; k < K; ++k) a[k] = _mm256_setzero_ps();
  for (int64_t r = 0; r < rows; ++r) {
    const __m256 pv = _mm256_set1_ps(p[r]);
    const float* m = M + r * cols;
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) a[k] = _mm256_fmadd_ps(pv, _mm256_loadu_ps(m + 8 * k), a[k]);
  }
  for (int k = 0; k < K; ++k) _mm256_storeu_ps(y + 8 * k, a[k]);
}

__attribute__((target("avx2,fma"))) void vecmat_avx2(const float* M, const float* p, float* y,
                                                     int64_t rows, int64_t cols) {
  if (g_vecmat_narrow && cols % 8 == 0 && cols <= 64) {
    switch (cols / 8) {
      case 1:
        return vecmat_narrow_avx2<1>(M, p, y, rows);
      case 2:
        return vecmat_narrow_avx2<2>(M, p, y, rows);
      case 3:
        return vecmat_narrow_avx2<3>(M, p, y, rows);
      case 4:
        return vecmat_narrow_avx2<4>(M, p, y, rows);
      case 5:
        return vecmat_narrow_avx2<5>(M, p, y, rows);
      case 6:
        return vecmat_narrow_avx2<6>(M, p, y, rows);
      case 7:
        return vecmat_narrow_avx2<7>(M, p, y, rows);
      case 8:
        return vecmat_narrow_avx2<8>(M, p, y, rows);
      default:
        break;
    }
  }
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) {
      const __m256 pv = _mm256_set1_ps(p[r]);
      a0 = _mm256_fmadd_ps(pv, _mm256_loadu_ps(M + r * cols + c), a0);
      a1 = _mm256_fmadd_ps(pv, _mm256_loadu_ps(M + r * cols + c + 8), a1);
    }
    _mm256_storeu_ps(y + c, a0);
    _mm256_storeu_ps(y + c + 8, a1);
  }
  for (; c + 8 <= cols; c += 8) {
    __m256 a0 = _mm256_setzero_ps();
    for (int64_t r = 0; r < rows; ++r)
      a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), _mm256_loadu_ps(M + r * cols + c), a0);
    _mm256_storeu_ps(y + c, a0);
  }
  for (; c < cols; ++c) {
    float s = 0;
    for (int64_t r = 0; r < rows; ++r) s += p[r] * M[r * cols + c];
    y[c] = s;
  }
}

}  // namespace seqlab::infer::detail
