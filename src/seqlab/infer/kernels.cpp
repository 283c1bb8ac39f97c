#include "seqlab/infer/kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

namespace seqlab::infer {

namespace {

std::atomic<bool> g_vecmat_narrow{true};  // set_vecmat_narrow(): the tests compare both paths

void matvec_scalar(const float* W, const float* bias, const float* x, float* y, int64_t rows,
                   int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = W + r * cols;
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) s += w[c] * x[c];
    y[r] = s + (bias ? bias[r] : 0.0f);
  }
}

__attribute__((target("avx2,fma"))) float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
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

// Four inputs times two weight rows at a time (the server's batch): each weight vector is loaded
// once for four inputs. Every (row, input) pair has one accumulator summed over the columns in
// order, exactly as matvec_avx2's rows below a multiple of 4, whose results these are bitwise;
// rows past the last multiple of 4 go through dot_avx2 as there. W, bias are offset to row r0 by
// the caller; rows here is even.
__attribute__((target("avx2,fma"))) void matmul4_pairs_avx2(const float* W, const float* bias,
                                                            const float* const* x, float* const* y,
                                                            int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r += 2) {
    const float *w0 = W + r * cols, *w1 = w0 + cols;
    __m256 a[2][4];
    for (int i = 0; i < 4; ++i) a[0][i] = a[1][i] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      const __m256 v0 = _mm256_loadu_ps(w0 + c), v1 = _mm256_loadu_ps(w1 + c);
      for (int i = 0; i < 4; ++i) {
        const __m256 xv = _mm256_loadu_ps(x[i] + c);
        a[0][i] = _mm256_fmadd_ps(v0, xv, a[0][i]);
        a[1][i] = _mm256_fmadd_ps(v1, xv, a[1][i]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      float s0 = hsum256(a[0][i]), s1 = hsum256(a[1][i]);
      for (int64_t k = c; k < cols; ++k) {
        s0 += w0[k] * x[i][k];
        s1 += w1[k] * x[i][k];
      }
      y[i][r] = s0 + (bias ? bias[r] : 0.0f);
      y[i][r + 1] = s1 + (bias ? bias[r + 1] : 0.0f);
    }
  }
}

// Four rows at a time: x is loaded once per 8 columns for four weight rows.
__attribute__((target("avx2,fma"))) void matvec_avx2(const float* W, const float* bias,
                                                     const float* x, float* y, int64_t rows,
                                                     int64_t cols) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float *w0 = W + r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(),
           a3 = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      const __m256 xv = _mm256_loadu_ps(x + c);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + c), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + c), xv, a3);
    }
    float s0 = hsum256(a0), s1 = hsum256(a1), s2 = hsum256(a2), s3 = hsum256(a3);
    for (; c < cols; ++c) {
      s0 += w0[c] * x[c];
      s1 += w1[c] * x[c];
      s2 += w2[c] * x[c];
      s3 += w3[c] * x[c];
    }
    y[r] = s0 + (bias ? bias[r] : 0.0f);
    y[r + 1] = s1 + (bias ? bias[r + 1] : 0.0f);
    y[r + 2] = s2 + (bias ? bias[r + 2] : 0.0f);
    y[r + 3] = s3 + (bias ? bias[r + 3] : 0.0f);
  }
  for (; r < rows; ++r) y[r] = dot_avx2(W + r * cols, x, cols) + (bias ? bias[r] : 0.0f);
}

__attribute__((target("avx2,fma"))) void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

// exp(x) for 8 lanes: x = n ln2 + r with |r| <= ln2 / 2, e^r by its degree-6 Taylor polynomial
// (relative error < 2e-7 on that interval), 2^n through the exponent bits. Inputs are clamped to
// [-87.3, 88.7], the fp32 range; below it the result is ~1e-38 instead of a denormal or 0.
__attribute__((target("avx2,fma"))) __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2, with ln2 split in two for accuracy (Cody-Waite).
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
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
__attribute__((target("avx2,fma"))) void vecmat_narrow_avx2(const float* M, const float* p,
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

std::atomic<Kernel> g_kernel{Kernel::automatic};

Kernel resolve(Kernel k) {
  if (k == Kernel::automatic) return cpu_has_avx2_fma() ? Kernel::avx2 : Kernel::scalar;
  if (k == Kernel::avx2 && !cpu_has_avx2_fma()) return Kernel::scalar;
  return k;
}

}  // namespace

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

Kernel set_kernel(Kernel k) {
  g_kernel = resolve(k);
  return g_kernel;
}

Kernel active_kernel() {
  Kernel k = g_kernel;
  if (k == Kernel::automatic) k = set_kernel(Kernel::automatic);
  return k;
}

const char* kernel_name(Kernel k) {
  switch (resolve(k)) {
    case Kernel::avx2:
      return "avx2+fma";
    case Kernel::scalar:
      return "scalar";
    default:
      return "automatic";
  }
}

namespace {

void matvec_one(const float* W, const float* bias, const float* x, float* y, int64_t rows,
                int64_t cols) {
  if (active_kernel() == Kernel::avx2)
    matvec_avx2(W, bias, x, y, rows, cols);
  else
    matvec_scalar(W, bias, x, y, rows, cols);
}

// The row-splitting pool. One job at a time (the decoder is single-threaded above matvec): the
// caller publishes the job, bumps `generation`, runs part 0 itself and waits until every worker
// has bumped `done`. No allocation per job.
class RowPool {
 public:
  explicit RowPool(int n) : n_(n) {
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~RowPool() {
    stop_ = true;
    for (auto& t : workers_) t.join();
  }
  int size() const { return n_; }
  void run(const float* W, const float* bias, const float* x, float* y, int64_t rows,
           int64_t cols) {
    job_ = {W, bias, x, y, rows, cols};
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    part(0);
    // Spin briefly, then yield: on a busy machine a descheduled worker must get the core back.
    for (int64_t spins = 0; done_.load(std::memory_order_acquire) != n_ - 1; ++spins)
      if (spins < 2048)
        _mm_pause();
      else
        std::this_thread::yield();
  }

 private:
  struct Job {
    const float *W = nullptr, *bias = nullptr, *x = nullptr;
    float* y = nullptr;
    int64_t rows = 0, cols = 0;
  };
  void part(int i) const {
    // Contiguous row ranges, multiples of 4 (the AVX2 kernel's row block) except the last.
    const int64_t per = ((job_.rows + n_ - 1) / n_ + 3) / 4 * 4;
    const int64_t r0 = std::min<int64_t>(job_.rows, i * per);
    const int64_t r1 = std::min<int64_t>(job_.rows, r0 + per);
    if (r1 > r0)
      matvec_one(job_.W + r0 * job_.cols, job_.bias ? job_.bias + r0 : nullptr, job_.x, job_.y + r0,
                 r1 - r0, job_.cols);
  }
  void work(int i) {
    // Generation 0 is "no job yet": a worker that starts late must still run the first job.
    uint64_t seen = 0;
    int64_t idle = 0;
    while (!stop_) {
      const uint64_t g = generation_.load(std::memory_order_acquire);
      if (g == seen) {
        if (++idle > 2048)
          std::this_thread::yield();
        else
          _mm_pause();
        continue;
      }
      seen = g;
      idle = 0;
      part(i);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  int n_;
  Job job_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

std::unique_ptr<RowPool> g_pool;

}  // namespace

void set_threads(int n) {
  n = std::max(1, n);
  if (g_pool && g_pool->size() == n) return;
  g_pool.reset();
  if (n > 1) g_pool = std::make_unique<RowPool>(n);
}

int threads() {
  return g_pool ? g_pool->size() : 1;
}

void matvec(const float* W, const float* bias, const float* x, float* y, int64_t rows,
            int64_t cols) {
  if (g_pool && rows * cols >= kParallelWork && rows >= 8)
    g_pool->run(W, bias, x, y, rows, cols);
  else
    matvec_one(W, bias, x, y, rows, cols);
}

namespace {

std::atomic<bool> g_prefill_tiled{true};

// GEMM for prefill: Y[i, r] = sum_c X[i, c] W[r, c]. A block of 16 weight rows is packed
// transposed and contiguous, P[c * 16 + k] = W[r + k, c], so that one 8-float load gives 8 outputs'
// weights for column c; the micro-kernel multiplies 4 input rows (broadcast X[i, c]) by those 16
// outputs into 8 accumulators. Per column: 2 weight loads + 4 broadcasts for 8 FMAs, and no
// horizontal sums (matvec needs one per output). Each output sums its columns in order, in one
// lane, so prefill and stepping differ by rounding only (tested to 1e-4 like everything else).
constexpr int64_t kPanel = 16;

__attribute__((target("avx2,fma"))) void gemm_4x16_avx2(const float* P, const float* const x[4],
                                                        int64_t cols, int64_t nx,
                                                        __m256 out[4][2]) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(),
         c11 = _mm256_setzero_ps(), c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(),
         c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  if (nx == 4) {
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    for (int64_t c = 0; c < cols; ++c) {
      const __m256 w0 = _mm256_loadu_ps(P + c * kPanel), w1 = _mm256_loadu_ps(P + c * kPanel + 8);
      __m256 b = _mm256_broadcast_ss(x0 + c);
      c00 = _mm256_fmadd_ps(w0, b, c00);
      c01 = _mm256_fmadd_ps(w1, b, c01);
      b = _mm256_broadcast_ss(x1 + c);
      c10 = _mm256_fmadd_ps(w0, b, c10);
      c11 = _mm256_fmadd_ps(w1, b, c11);
      b = _mm256_broadcast_ss(x2 + c);
      c20 = _mm256_fmadd_ps(w0, b, c20);
      c21 = _mm256_fmadd_ps(w1, b, c21);
      b = _mm256_broadcast_ss(x3 + c);
      c30 = _mm256_fmadd_ps(w0, b, c30);
      c31 = _mm256_fmadd_ps(w1, b, c31);
    }
  } else {  // 1-3 input rows left: one at a time
    for (int64_t c = 0; c < cols; ++c) {
      const __m256 w0 = _mm256_loadu_ps(P + c * kPanel), w1 = _mm256_loadu_ps(P + c * kPanel + 8);
      const __m256 b = _mm256_broadcast_ss(x[0] + c);
      c00 = _mm256_fmadd_ps(w0, b, c00);
      c01 = _mm256_fmadd_ps(w1, b, c01);
    }
  }
  out[0][0] = c00, out[0][1] = c01, out[1][0] = c10, out[1][1] = c11;
  out[2][0] = c20, out[2][1] = c21, out[3][0] = c30, out[3][1] = c31;
}

__attribute__((target("avx2,fma"))) void matmul_packed_avx2(const float* W, const float* bias,
                                                            const float* X, float* Y, int64_t n,
                                                            int64_t rows, int64_t cols) {
  // The packed panel is reused across calls (prefill only; grows to the largest layer once).
  static thread_local std::vector<float> panel;
  panel.resize(static_cast<size_t>(cols * kPanel));
  float* P = panel.data();
  alignas(32) float tile[4][kPanel];
  for (int64_t r0 = 0; r0 < rows; r0 += kPanel) {
    const int64_t nr = std::min(kPanel, rows - r0);
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t k = 0; k < kPanel; ++k) P[c * kPanel + k] = k < nr ? W[(r0 + k) * cols + c] : 0;
    for (int64_t i = 0; i < n;) {
      const int64_t nx = n - i >= 4 ? 4 : 1;
      const float* x[4] = {X + i * cols, nullptr, nullptr, nullptr};
      if (nx == 4)
        for (int k = 1; k < 4; ++k) x[k] = X + (i + k) * cols;
      __m256 acc[4][2];
      gemm_4x16_avx2(P, x, cols, nx, acc);
      for (int64_t a = 0; a < nx; ++a) {
        _mm256_store_ps(tile[a], acc[a][0]);
        _mm256_store_ps(tile[a] + 8, acc[a][1]);
        float* y = Y + (i + a) * rows + r0;
        for (int64_t k = 0; k < nr; ++k) y[k] = tile[a][k] + (bias ? bias[r0 + k] : 0.0f);
      }
      i += nx;
    }
  }
}

}  // namespace

void set_vecmat_narrow(bool on) {
  g_vecmat_narrow = on;
}

void set_prefill_tiled(bool on) {
  g_prefill_tiled = on;
}
bool prefill_tiled() {
  return g_prefill_tiled;
}

void matmul_rows(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                 int64_t rows, int64_t cols) {
  if (g_prefill_tiled && !g_pool && active_kernel() == Kernel::avx2 && n >= 4) {
    matmul_packed_avx2(W, bias, X, Y, n, rows, cols);
    return;
  }
  matmul_rows_blocked(W, bias, X, Y, n, rows, cols);
}

void matmul_rows_blocked(const float* W, const float* bias, const float* X, float* Y, int64_t n,
                         int64_t rows, int64_t cols) {
  // The 4-input kernel when the columns fill whole vectors (every model width here): a scalar
  // column tail may be contracted into FMAs differently from matvec_avx2's, and the results must
  // stay bitwise matvec's.
  if (active_kernel() == Kernel::avx2 && !g_pool && n >= 4 && cols % 8 == 0) {
    // Blocks of 32 weight rows (in cache) against groups of 4 inputs; the rows past the last
    // multiple of 4 and the inputs past the last group of 4 as matvec_avx2 computes them.
    const int64_t rows4 = rows - rows % 4, n4 = n - n % 4;
    constexpr int64_t kBlock = 32;
    for (int64_t r0 = 0; r0 < rows4; r0 += kBlock) {
      const int64_t nr = std::min(kBlock, rows4 - r0);
      for (int64_t i = 0; i < n4; i += 4) {
        const float* x[4] = {X + i * cols, X + (i + 1) * cols, X + (i + 2) * cols,
                             X + (i + 3) * cols};
        float* y[4] = {Y + i * rows + r0, Y + (i + 1) * rows + r0, Y + (i + 2) * rows + r0,
                       Y + (i + 3) * rows + r0};
        matmul4_pairs_avx2(W + r0 * cols, bias ? bias + r0 : nullptr, x, y, nr, cols);
      }
      for (int64_t i = n4; i < n; ++i)
        matvec_avx2(W + r0 * cols, bias ? bias + r0 : nullptr, X + i * cols, Y + i * rows + r0, nr,
                    cols);
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = rows4; r < rows; ++r)
        Y[i * rows + r] = dot_avx2(W + r * cols, X + i * cols, cols) + (bias ? bias[r] : 0.0f);
    return;
  }
  // One matvec per input row, in blocks of 8 input rows: each block reuses the weights while they
  // are in cache.
  constexpr int64_t kRowBlock = 8, kOutBlock = 64;
  for (int64_t i0 = 0; i0 < n; i0 += kRowBlock) {
    const int64_t i1 = std::min(n, i0 + kRowBlock);
    for (int64_t r0 = 0; r0 < rows; r0 += kOutBlock) {
      const int64_t nr = std::min(rows, r0 + kOutBlock) - r0;
      for (int64_t i = i0; i < i1; ++i)
        matvec(W + r0 * cols, bias ? bias + r0 : nullptr, X + i * cols, Y + i * rows + r0, nr,
               cols);
    }
  }
}

float dot(const float* a, const float* b, int64_t n) {
  if (active_kernel() == Kernel::avx2) return dot_avx2(a, b, n);
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  if (active_kernel() == Kernel::avx2) {
    axpy_avx2(a, x, y, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void vecmat(const float* M, const float* p, float* y, int64_t rows, int64_t cols) {
  if (active_kernel() == Kernel::avx2) {
    vecmat_avx2(M, p, y, rows, cols);
    return;
  }
  std::fill(y, y + cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[c] += p[r] * M[r * cols + c];
}

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, int64_t n,
                double eps) {
  if (active_kernel() == Kernel::avx2) {
    layer_norm_avx2(x, gamma, beta, y, n, eps);
    return;
  }
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const float m = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * gamma[i] + beta[i];
}

void rms_norm(const float* x, const float* gamma, float* y, int64_t n, double eps) {
  if (active_kernel() == Kernel::avx2) {
    rms_norm_avx2(x, gamma, y, n, eps);
    return;
  }
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float ms = static_cast<float>(ss / static_cast<double>(n));
  const float inv = 1.0f / std::sqrt(ms + static_cast<float>(eps));
  for (int64_t i = 0; i < n; ++i) y[i] = gamma[i] * (x[i] * inv);
}

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  if (active_kernel() == Kernel::avx2) {
    silu_mul_avx2(g, u, out, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void gelu(float* x, int64_t n) {
  if (active_kernel() == Kernel::avx2) {
    gelu_avx2(x, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void gelu_tanh(float* x, int64_t n) {
  if (active_kernel() == Kernel::avx2) {
    gelu_tanh_avx2(x, n);
    return;
  }
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::tanh(k * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

void rope_rotate(float* x, const float* cos, const float* sin, int64_t half) {
  if (active_kernel() == Kernel::avx2) {
    rope_rotate_avx2(x, cos, sin, half);
    return;
  }
  float* x2 = x + half;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x2[i];
    x[i] = a * cos[i] - b * sin[i];  // x1 cos + (-x2) sin, as apply_rope
    x2[i] = b * cos[i] + a * sin[i];
  }
}

void softmax(float* x, int64_t n) {
  if (active_kernel() == Kernel::avx2) {
    softmax_avx2(x, n);
    return;
  }
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += (x[i] = std::exp(x[i] - mx));
  const float inv = static_cast<float>(1.0 / s);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace seqlab::infer
