#include "seqlab/infer/kernels.h"

#include "seqlab/infer/kernels_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace seqlab::infer {

using namespace detail;  // the loops of kernels_avx2.cpp

namespace {

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

// The batched product on one thread: the register-tiled kernels when the columns fill whole
// vectors (every model width here; a scalar column tail may be contracted into FMAs differently
// from matvec_avx2's, and the results must stay bitwise matvec's), else one matvec per input row.
// Y's rows are ldy apart.
void batch_one(const float* W, const float* bias, const float* X, float* Y, int64_t n, int64_t rows,
               int64_t cols, int64_t ldy) {
  const bool avx2 = active_kernel() == Kernel::avx2;
  if (avx2 && cols % 8 == 0) {
    matmul_tiles_avx2(W, bias, X, Y, n, rows, cols, ldy);
  } else if (!avx2) {
    matmul_tiles_scalar(W, bias, X, Y, n, rows, cols, ldy);
  } else {
    for (int64_t i = 0; i < n; ++i) matvec_avx2(W, bias, X + i * cols, Y + i * ldy, rows, cols);
  }
}

// The row-splitting pool. One job at a time (the decoder is single-threaded above its products):
// the caller publishes the job, bumps `generation`, runs part 0 itself and waits until every
// worker has bumped `done`. A job is a matvec (n = 1) or a batched product over n input rows; each
// part is a contiguous range of weight rows, for every input. No allocation per job. Workers spin
// a little between jobs (a step's products come microseconds apart), then sleep on a condition
// variable, so an idle server's pool costs no CPU. Nobody yields while a step runs: on a loaded
// machine sched_yield gave the core away for a time slice at every product (a 4-layer model's
// token took 6.7 ms on 2 threads against 1.6 ms on one).
class RowPool {
  // Pauses (~10-40 ns each) a waiting thread spins before it yields (the caller) or sleeps (a
  // worker).
  static constexpr int64_t kSpinLimit = 1 << 14;

 public:
  explicit RowPool(int n) : n_(n) {
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~RowPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return n_; }
  void run(const float* W, const float* bias, const float* X, float* Y, int64_t n, int64_t rows,
           int64_t cols) {
    job_ = {W, bias, X, Y, n, rows, cols};
    start();
  }
  // A product of another weight format (infer/kernels_quant.cpp): fn(ctx, r0, r1) computes weight
  // rows [r0, r1) for every input.
  void run(RowsFn fn, const void* ctx, int64_t rows) {
    job_ = {};
    job_.fn = fn;
    job_.ctx = ctx;
    job_.rows = rows;
    start();
  }

 private:
  void start() {
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    // A worker that counted itself a sleeper checks the generation under mu_ before it waits.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    part(0);
    // Spin briefly, then yield: on a busy machine a descheduled worker must get the core back
    // (spinning on until it does left a 2-thread token 4x slower than yielding, measured).
    for (int64_t spins = 0; done_.load(std::memory_order_acquire) != n_ - 1; ++spins)
      if (spins < 2048)
        _mm_pause();
      else
        std::this_thread::yield();
  }

  struct Job {
    const float *W = nullptr, *bias = nullptr, *X = nullptr;
    float* Y = nullptr;
    int64_t n = 1, rows = 0, cols = 0;
    RowsFn fn = nullptr;
    const void* ctx = nullptr;
  };
  void part(int i) const {
    // Contiguous row ranges, multiples of 4 (the AVX2 kernels' row block) except the last, so that
    // each row is computed by the same code whatever the split.
    const int64_t per = ((job_.rows + n_ - 1) / n_ + 3) / 4 * 4;
    const int64_t r0 = std::min<int64_t>(job_.rows, i * per);
    const int64_t r1 = std::min<int64_t>(job_.rows, r0 + per);
    if (r1 <= r0) return;
    if (job_.fn) {
      job_.fn(job_.ctx, r0, r1);
      return;
    }
    const float* b = job_.bias ? job_.bias + r0 : nullptr;
    if (job_.n == 1)
      matvec_one(job_.W + r0 * job_.cols, b, job_.X, job_.Y + r0, r1 - r0, job_.cols);
    else
      batch_one(job_.W + r0 * job_.cols, b, job_.X, job_.Y + r0, job_.n, r1 - r0, job_.cols,
                job_.rows);
  }
  void work(int i) {
    // Generation 0 is "no job yet": a worker that starts late must still run the first job.
    uint64_t seen = 0;
    int64_t idle = 0;
    while (true) {
      const uint64_t g = generation_.load(std::memory_order_acquire);
      if (g == seen) {
        // Spin for the next product of this step (microseconds away); past kSpinLimit pauses
        // (tens of microseconds: the step is over), sleep until the next job.
        if (++idle < kSpinLimit) {
          _mm_pause();
        } else {
          std::unique_lock<std::mutex> lock(mu_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          cv_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);
          idle = 0;
        }
        if (stop_) return;
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
  std::atomic<int> done_{0}, sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
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

void parallel_rows(RowsFn fn, const void* ctx, int64_t rows, int64_t work) {
  if (g_pool && work >= kParallelWork && rows >= 8)
    g_pool->run(fn, ctx, rows);
  else
    fn(ctx, 0, rows);
}

void matvec(const float* W, const float* bias, const float* x, float* y, int64_t rows,
            int64_t cols) {
  if (g_pool && rows * cols >= kParallelWork && rows >= 8)
    g_pool->run(W, bias, x, y, 1, rows, cols);
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
  if (n == 1) {
    matvec(W, bias, X, Y, rows, cols);
    return;
  }
  if (g_pool && n * rows * cols >= kParallelWork && rows >= 8) {
    g_pool->run(W, bias, X, Y, n, rows, cols);
    return;
  }
  batch_one(W, bias, X, Y, n, rows, cols, rows);
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

float scan_channel(const float* a, float dl, float du, const float* B, const float* C, float* h,
                   int64_t N) {
  if (active_kernel() == Kernel::avx2) return scan_channel_avx2(a, dl, du, B, C, h, N);
  float sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    h[n] = std::exp(dl * a[n]) * h[n] + du * B[n];
    sum += h[n] * C[n];
  }
  return sum;
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
