// Fast softmax attention: the KV cache, preallocated for max_len tokens.
// State: K [G][max_len][Dh] then V [G][max_len][Dh] (G = kv heads; G = H without grouped-query
// attention): head-major, so one head's keys are a contiguous matrix and its scores are one
// matrix-vector product. Keys are cached rotated (RoPE), as SoftmaxAttentionState holds them.
// Query head h reads kv head h / (H / G).
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/fast_rope.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/softmax_attention.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

class FastSoftmax : public FastMixer {
 public:
  FastSoftmax(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        H_(cfg.n_head),
        G_(cfg.kv_heads()),
        Dh_(cfg.d_head()),
        Dkv_(G_ * Dh_),
        L_(cfg.max_len),
        q_(w, "q", D_, D_),
        k_(w, "k", Dkv_, D_),
        v_(w, "v", Dkv_, D_),
        o_(w, "o", D_, D_),
        rope_(w.rope(cfg)) {}
  int64_t state_size() const override { return 2 * L_ * Dkv_; }
  int64_t scratch_size() const override { return 2 * D_ + 2 * Dkv_ + L_; }
  void reset(float* state) const override { std::fill(state, state + state_size(), 0.0f); }
  void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const override {
    float *q = scratch, *k = q + D_, *v = k + Dkv_, *att = v + Dkv_, *p = att + D_;
    q_(x, q);
    k_(x, k);
    v_(x, v);
    if (rope_) rope_->rotate_qk(q, H_, k, G_, Dh_, 1, pos);
    attend(q, k, v, att, state, p, pos);
    o_(att, y);
  }
  int64_t prefill_scratch_size(int64_t n) const override { return 2 * n * D_ + 2 * n * Dkv_ + L_; }
  void prefill(const float* X, float* Y, int64_t n, int64_t, float* state, float* scratch,
               int64_t pos0) const override {
    float *Q = scratch, *K = Q + n * D_, *V = K + n * Dkv_, *A = V + n * Dkv_, *p = A + n * D_;
    q_.prefill(X, Q, n);
    k_.prefill(X, K, n);
    v_.prefill(X, V, n);
    if (rope_) rope_->rotate_qk(Q, H_, K, G_, Dh_, n, pos0);
    for (int64_t i = 0; i < n; ++i)
      attend(Q + i * D_, K + i * Dkv_, V + i * Dkv_, A + i * D_, state, p, pos0 + i);
    o_.prefill(A, Y, n);
  }
  int64_t batch_scratch_size(int64_t B) const override { return prefill_scratch_size(B); }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t* pos) const override {
    float *Q = scratch, *K = Q + B * D_, *V = K + B * Dkv_, *A = V + B * Dkv_, *p = A + B * D_;
    q_.rows(X, Q, B);
    k_.rows(X, K, B);
    v_.rows(X, V, B);
    for (int64_t i = 0; i < B; ++i) {
      if (rope_) rope_->rotate_qk(Q + i * D_, H_, K + i * Dkv_, G_, Dh_, 1, pos[i]);
      attend(Q + i * D_, K + i * Dkv_, V + i * Dkv_, A + i * D_, states[i], p, pos[i]);
    }
    o_.rows(A, Y, B);
  }
  // Packed: K rows 0..pos-1 of each kv head, then V's; the rows past pos are reset()'s zeros.
  int64_t packed_size(int64_t pos) const override { return 2 * std::min(pos, L_) * Dkv_; }
  void pack(const float* state, int64_t pos, float* out) const override {
    const int64_t n = std::min(pos, L_) * Dh_;
    for (int64_t kv = 0; kv < 2 * G_; ++kv)  // K's heads, then V's, each [L][Dh]
      out = std::copy(state + kv * L_ * Dh_, state + kv * L_ * Dh_ + n, out);
  }
  void unpack(const float* in, int64_t pos, float* state) const override {
    const int64_t n = std::min(pos, L_) * Dh_;
    for (int64_t kv = 0; kv < 2 * G_; ++kv) {
      float* head = state + kv * L_ * Dh_;
      std::copy(in + kv * n, in + (kv + 1) * n, head);
      std::fill(head + n, head + L_ * Dh_, 0.0f);
    }
  }

 private:
  // Appends k_t, v_t [G*Dh] to the cache at pos and writes the attention output of q_t [D] to
  // att [D]; p is scratch for pos + 1 scores.
  void attend(const float* q, const float* k, const float* v, float* att, float* state, float* p,
              int64_t pos) const {
    SEQLAB_CHECK(pos < L_,
                 "softmax attention: the KV cache is full (max_len = {}); cannot step token {}", L_,
                 pos + 1);
    float* K = state;
    float* V = state + L_ * Dkv_;
    for (int64_t g = 0; g < G_; ++g) {
      std::copy(k + g * Dh_, k + (g + 1) * Dh_, K + (g * L_ + pos) * Dh_);
      std::copy(v + g * Dh_, v + (g + 1) * Dh_, V + (g * L_ + pos) * Dh_);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh_));
    const int64_t rep = H_ / G_;
    for (int64_t h = 0; h < H_; ++h) {
      const int64_t g = h / rep;
      matvec(K + g * L_ * Dh_, nullptr, q + h * Dh_, p, pos + 1, Dh_);  // keys 0..pos
      for (int64_t t = 0; t <= pos; ++t) p[t] *= scale;
      softmax(p, pos + 1);
      vecmat(V + g * L_ * Dh_, p, att + h * Dh_, pos + 1, Dh_);  // weights times values
    }
  }

  int64_t D_, H_, G_, Dh_, Dkv_, L_;
  Dense q_, k_, v_, o_;
  std::shared_ptr<const FastRope> rope_;  // null without RoPE
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(SoftmaxAttentionImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastSoftmax>(cfg, w);
                          });

}  // namespace seqlab::infer
