// Fast softmax attention: the KV cache, preallocated for max_len tokens.
// State: K [H][max_len][Dh] then V [H][max_len][Dh]: head-major, so one head's keys are a
// contiguous matrix and its scores are one matrix-vector product.
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/mixers/registry.h"

#include <cmath>

namespace seqlab::infer {

namespace {

class FastSoftmax : public FastMixer {
 public:
  FastSoftmax(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        H_(cfg.n_head),
        Dh_(cfg.d_head()),
        L_(cfg.max_len),
        q_(w, "q", D_, D_),
        k_(w, "k", D_, D_),
        v_(w, "v", D_, D_),
        o_(w, "o", D_, D_) {}
  int64_t state_size() const override { return 2 * L_ * D_; }
  int64_t scratch_size() const override { return 4 * D_ + L_; }
  void reset(float* state) const override { std::fill(state, state + state_size(), 0.0f); }
  void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const override {
    float *q = scratch, *k = q + D_, *v = k + D_, *att = v + D_, *p = att + D_;
    q_(x, q);
    k_(x, k);
    v_(x, v);
    attend(q, k, v, att, state, p, pos);
    o_(att, y);
  }
  int64_t prefill_scratch_size(int64_t n) const override { return 4 * n * D_ + L_; }
  void prefill(const float* X, float* Y, int64_t n, int64_t, float* state, float* scratch,
               int64_t pos0) const override {
    float *Q = scratch, *K = Q + n * D_, *V = K + n * D_, *A = V + n * D_, *p = A + n * D_;
    matmul_rows(q_.w.data(), q_.b.empty() ? nullptr : q_.b.data(), X, Q, n, D_, D_);
    matmul_rows(k_.w.data(), k_.b.empty() ? nullptr : k_.b.data(), X, K, n, D_, D_);
    matmul_rows(v_.w.data(), v_.b.empty() ? nullptr : v_.b.data(), X, V, n, D_, D_);
    for (int64_t i = 0; i < n; ++i)
      attend(Q + i * D_, K + i * D_, V + i * D_, A + i * D_, state, p, pos0 + i);
    matmul_rows(o_.w.data(), o_.b.empty() ? nullptr : o_.b.data(), A, Y, n, D_, D_);
  }

 private:
  // Appends k_t, v_t to the cache at pos and writes the attention output of q_t to att [D];
  // p is scratch for pos + 1 scores.
  void attend(const float* q, const float* k, const float* v, float* att, float* state, float* p,
              int64_t pos) const {
    SEQLAB_CHECK(pos < L_,
                 "softmax attention: the KV cache is full (max_len = {}); cannot step token {}", L_,
                 pos + 1);
    float* K = state;
    float* V = state + L_ * D_;
    for (int64_t h = 0; h < H_; ++h) {
      std::copy(k + h * Dh_, k + (h + 1) * Dh_, K + (h * L_ + pos) * Dh_);
      std::copy(v + h * Dh_, v + (h + 1) * Dh_, V + (h * L_ + pos) * Dh_);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh_));
    for (int64_t h = 0; h < H_; ++h) {
      matvec(K + h * L_ * Dh_, nullptr, q + h * Dh_, p, pos + 1, Dh_);  // keys 0..pos
      for (int64_t t = 0; t <= pos; ++t) p[t] *= scale;
      softmax(p, pos + 1);
      vecmat(V + h * L_ * Dh_, p, att + h * Dh_, pos + 1, Dh_);  // weights times values
    }
  }

  int64_t D_, H_, Dh_, L_;
  Dense q_, k_, v_, o_;
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(SoftmaxAttentionImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastSoftmax>(cfg, w);
                          });

}  // namespace seqlab::infer
