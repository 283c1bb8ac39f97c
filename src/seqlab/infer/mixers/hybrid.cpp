// Fast hybrid attention (mixers/hybrid_attention.h has the maths): exact softmax over the last W
// tokens plus (gated, decayed) linear attention over every older one, under one normaliser
//
//   y_t = [f_h sum_{j in Win(t)} exp(s_tj - m_t) v_j + (1 - f_h) phi(q_t).S_t]
//         / [f_h sum_{j in Win(t)} exp(s_tj - m_t) + (1 - f_h) phi(q_t).z_t + eps]
//
// (with W = 0 only the linear part, y_t = phi(q_t).S_t / (phi(q_t).z_t + eps), S_t holding every
// key up to t). H = query heads, G = kv heads, Dh = head width, F' = the feature map's width,
// W = the window.
//
// State per sequence, in this order (each block contiguous, all fp32):
//   per query head h:  S [F'][Dh], then z [F']: the keys that left the window, decayed to now
//   ring keys          [G][W][Dh]: the window's keys after RoPE; token j sits in slot j % W
//   ring values        [G][W][Dh]
//   log decays         [H][W]: g_j of the window's tokens per query head (0 while unused)
// HybridAttentionState holds the same numbers, except that it keeps every head's S before every
// head's z; its pos is the step's argument here.
// When token t arrives (t >= W), token t - W leaves slot t % W for S with the decay
// exp(g_{t-W+1} + ... + g_t): the sum of the slots' log decays after g_t is written (slot order).
// Query head h reads kv head h / (H / G); the linear state is per query head (per-head key maps).
// The log decay g_t,h = log(decay) [+ logsigmoid(mean_d k_t,g(h),d + gate_bias_h) / 16 with
// --gate key, k before RoPE]; f_h = sigmoid(window_factor_h).
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/fast_rope.h"
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/hybrid_attention.h"
#include "seqlab/mixers/registry.h"

#include <algorithm>
#include <cmath>

namespace seqlab::infer {

namespace {

constexpr float kEps = static_cast<float>(HybridAttentionImpl::kEps);
constexpr float kGateNorm = static_cast<float>(HybridAttentionImpl::kGateNorm);

// log(sigmoid(x)) without overflow, as torch::log_sigmoid computes it.
float log_sigmoid(float x) {
  return std::min(x, 0.0f) - std::log1p(std::exp(-std::fabs(x)));
}

class FastHybrid : public FastMixer {
 public:
  FastHybrid(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        H_(cfg.n_head),
        G_(cfg.kv_heads()),
        Dh_(cfg.d_head()),
        Dkv_(G_ * Dh_),
        W_(cfg.window),
        q_(w, "q", D_, D_),
        k_(w, "k", Dkv_, D_),
        v_(w, "v", Dkv_, D_),
        o_(w, "o", D_, D_),
        map_(make_fast_feature_map(cfg, w)),
        Fo_(map_->out_dim()),
        log_decay_(static_cast<float>(std::log(cfg.decay))),
        scale_(static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh_)))),
        rope_(w.rope(cfg)) {
    SEQLAB_CHECK(!map_->exponential(),
                 "fast decoder: hybrid attention needs a feature map without running offsets, not "
                 "'{}'",
                 cfg.feature_map);
    SEQLAB_CHECK(W_ >= 0, "fast decoder: hybrid attention window {} < 0", W_);
    if (W_ > 0) {
      factor_ = w.take("window_factor", {H_});
      for (float& f : factor_) f = 1.0f / (1.0f + std::exp(-f));  // f_h = sigmoid(...)
    }
    if (cfg.gate == "key") gate_bias_ = w.take("gate_bias", {H_});
  }

  int64_t head_state() const { return Fo_ * Dh_ + Fo_; }
  int64_t state_size() const override { return H_ * head_state() + 2 * G_ * W_ * Dh_ + H_ * W_; }
  // q [D], k, v [G*Dh], attention output [D], log decays [H], then recur()'s work().
  int64_t scratch_size() const override { return 2 * D_ + 2 * Dkv_ + H_ + work(); }
  void reset(float* state) const override { std::fill(state, state + state_size(), 0.0f); }

  void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const override {
    float *q = scratch, *k = q + D_, *v = k + Dkv_, *att = v + Dkv_, *g = att + D_;
    q_(x, q);          // [D]
    k_(x, k);          // [G*Dh]
    v_(x, v);          // [G*Dh]
    log_decays(k, g);  // [H], from k before RoPE
    if (rope_) rope_->rotate_qk(q, H_, k, G_, Dh_, 1, pos);
    recur(q, k, v, g, att, state, g + H_, pos);  // [D]
    o_(att, y);                                  // [D]
  }

  int64_t prefill_scratch_size(int64_t n) const override {
    return 2 * n * D_ + 2 * n * Dkv_ + n * H_ + work();
  }
  void prefill(const float* X, float* Y, int64_t n, int64_t, float* state, float* scratch,
               int64_t pos0) const override {
    float *Q = scratch, *K = Q + n * D_, *V = K + n * Dkv_, *A = V + n * Dkv_, *Lg = A + n * D_;
    q_.prefill(X, Q, n);                                                    // [n,D]
    k_.prefill(X, K, n);                                                    // [n,G*Dh]
    v_.prefill(X, V, n);                                                    // [n,G*Dh]
    for (int64_t i = 0; i < n; ++i) log_decays(K + i * Dkv_, Lg + i * H_);  // [n,H]
    if (rope_) rope_->rotate_qk(Q, H_, K, G_, Dh_, n, pos0);
    for (int64_t i = 0; i < n; ++i)
      recur(Q + i * D_, K + i * Dkv_, V + i * Dkv_, Lg + i * H_, A + i * D_, state, Lg + n * H_,
            pos0 + i);
    o_.prefill(A, Y, n);  // [n,D]
  }

  int64_t batch_scratch_size(int64_t B) const override { return prefill_scratch_size(B); }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t* pos) const override {
    float *Q = scratch, *K = Q + B * D_, *V = K + B * Dkv_, *A = V + B * Dkv_, *Lg = A + B * D_;
    q_.rows(X, Q, B);  // [B,D]
    k_.rows(X, K, B);  // [B,G*Dh]
    v_.rows(X, V, B);  // [B,G*Dh]
    for (int64_t i = 0; i < B; ++i) {
      float *q = Q + i * D_, *k = K + i * Dkv_, *g = Lg + i * H_;
      log_decays(k, g);  // [H], before RoPE
      if (rope_) rope_->rotate_qk(q, H_, k, G_, Dh_, 1, pos[i]);
      recur(q, k, V + i * Dkv_, g, A + i * D_, states[i], Lg + B * H_, pos[i]);
    }
    o_.rows(A, Y, B);  // [B,D]
  }

 private:
  // recur()'s scratch: phi(q), phi(k) [F'], the feature map's temporary [Dh], window scores [W],
  // the window's weighted values [Dh].
  int64_t work() const { return 2 * Fo_ + 2 * Dh_ + W_; }

  // Log decays g [H] of one token from its key projection k [G*Dh] before RoPE.
  void log_decays(const float* k, float* g) const {
    const int64_t rep = H_ / G_;
    for (int64_t h = 0; h < H_; ++h) {
      if (gate_bias_.empty()) {
        g[h] = log_decay_;
        continue;
      }
      const float* kh = k + (h / rep) * Dh_;
      float sum = 0;
      for (int64_t d = 0; d < Dh_; ++d) sum += kh[d];
      const float logit = sum / static_cast<float>(Dh_) + gate_bias_[h];  // mean_d k + bias
      g[h] = log_sigmoid(logit) / kGateNorm + log_decay_;
    }
  }

  // One token's recurrence from q [D], k, v [G*Dh] (after RoPE) and its log decays g [H] at
  // position pos: folds the token leaving the window (or, with W = 0, this token) into every
  // head's decayed S, z, writes this token into the ring and the attention output to att [D].
  void recur(const float* q, const float* k, const float* v, const float* g, float* att,
             float* state, float* work, int64_t pos) const {
    float* ring_k = state + H_ * head_state();  // [G][W][Dh]
    float* ring_v = ring_k + G_ * W_ * Dh_;     // [G][W][Dh]
    const int64_t slot = W_ > 0 ? pos % W_ : 0;
    for (int64_t h = 0; h < H_; ++h) fold(h, k, v, g[h], state, work, pos);
    for (int64_t j = 0; j < G_ && W_ > 0; ++j) {
      std::copy(k + j * Dh_, k + (j + 1) * Dh_, ring_k + (j * W_ + slot) * Dh_);
      std::copy(v + j * Dh_, v + (j + 1) * Dh_, ring_v + (j * W_ + slot) * Dh_);
    }
    for (int64_t h = 0; h < H_; ++h) attend(h, q + h * Dh_, att + h * Dh_, state, work, pos);
  }

  // Head h's linear state: S, z decay by exp(g_t); then the key that leaves the window at pos
  // (still in the ring) enters with its decay since, or with W = 0 the new key k enters.
  void fold(int64_t h, const float* k, const float* v, float gt, float* state, float* work,
            int64_t pos) const {
    float* S = state + h * head_state();  // [F'][Dh]
    float* z = S + Fo_ * Dh_;             // [F']
    float *pk = work + Fo_, *tmp = pk + Fo_;
    const int64_t j = h / (H_ / G_);                                        // its kv head
    float* gates = state + H_ * head_state() + 2 * G_ * W_ * Dh_ + h * W_;  // [W]
    const int64_t slot = W_ > 0 ? pos % W_ : 0;
    if (W_ > 0) gates[slot] = gt;
    const float dec = std::exp(gt);
    if (dec != 1.0f) {  // skipping a multiply by 1 changes no bit
      for (int64_t f = 0; f < Fo_ * Dh_; ++f) S[f] *= dec;
      for (int64_t f = 0; f < Fo_; ++f) z[f] *= dec;
    }
    const float* vin = v + j * Dh_;
    if (W_ == 0) {
      map_->apply(k + j * Dh_, h, false, pk, tmp, nullptr);  // [F']
    } else {
      if (pos < W_) return;  // nothing has left the window yet
      const float* ring_k = state + H_ * head_state();
      vin = ring_k + G_ * W_ * Dh_ + (j * W_ + slot) * Dh_;  // v_{pos-W}
      float since = 0;                                       // g_{pos-W+1} + ... + g_pos
      for (int64_t s = 0; s < W_; ++s) since += gates[s];
      map_->apply(ring_k + (j * W_ + slot) * Dh_, h, false, pk, tmp, nullptr);  // [F']
      const float w = std::exp(since);
      for (int64_t f = 0; f < Fo_; ++f) pk[f] *= w;
    }
    for (int64_t f = 0; f < Fo_; ++f) {
      axpy(pk[f], vin, S + f * Dh_, Dh_);
      z[f] += pk[f];
    }
  }

  // Head h's output out [Dh] for its query q [Dh] (after RoPE), the ring already holding pos.
  void attend(int64_t h, const float* q, float* out, const float* state, float* work,
              int64_t pos) const {
    const float* S = state + h * head_state();  // [F'][Dh]
    const float* z = S + Fo_ * Dh_;             // [F']
    float *pq = work, *tmp = pq + 2 * Fo_, *p = tmp + Dh_, *soft = p + W_;
    map_->apply(q, h, true, pq, tmp, nullptr);  // [F']
    vecmat(S, pq, out, Fo_, Dh_);               // phi(q).S [Dh]
    float den = 0;
    for (int64_t f = 0; f < Fo_; ++f) den += pq[f] * z[f];  // phi(q).z
    if (W_ > 0) {
      const int64_t j = h / (H_ / G_), n = std::min(pos + 1, W_);      // slots 0..n-1 are filled
      const float* ring_k = state + H_ * head_state() + j * W_ * Dh_;  // [W][Dh]
      const float* ring_v = ring_k + G_ * W_ * Dh_;                    // [W][Dh]
      matvec(ring_k, nullptr, q, p, n, Dh_);                           // [n] q.k_j
      for (int64_t s = 0; s < n; ++s) p[s] *= scale_;                  // [n] s_tj
      const float m = *std::max_element(p, p + n);                     // m_t: the window's max only
      float sden = 0;
      for (int64_t s = 0; s < n; ++s) {
        p[s] = std::exp(p[s] - m);  // [n] exp(s_tj - m_t), unnormalised
        sden += p[s];
      }
      vecmat(ring_v, p, soft, n, Dh_);  // sum_j exp(s_tj - m_t) v_j [Dh]
      const float f = factor_[h], rest = 1.0f - f;
      for (int64_t d = 0; d < Dh_; ++d) out[d] = f * soft[d] + rest * out[d];
      den = f * sden + rest * den;
    }
    const float norm = den + kEps;
    for (int64_t d = 0; d < Dh_; ++d) out[d] /= norm;
  }

  int64_t D_, H_, G_, Dh_, Dkv_, W_;
  Dense q_, k_, v_, o_;
  std::unique_ptr<FastFeatureMap> map_;   // phi (infer/feature_maps/<map>.cpp)
  int64_t Fo_;                            // F' = map_->out_dim()
  float log_decay_;                       // log(decay)
  float scale_;                           // 1 / sqrt(Dh)
  std::vector<float> factor_;             // [H] f_h = sigmoid(window_factor_h) (W > 0 only)
  std::vector<float> gate_bias_;          // [H] (--gate key only; empty otherwise)
  std::shared_ptr<const FastRope> rope_;  // null without RoPE
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(HybridAttentionImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastHybrid>(cfg, w);
                          });

}  // namespace seqlab::infer
