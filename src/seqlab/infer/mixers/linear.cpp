// Fast causal linear attention with every feature map (mixers/linear_attention.h has the maths:
// the same normalizer phi(q).S / (phi(q).z + eps * rho) and, for performer, the same running-max
// key offset m).
// State per query head h: S [F'][Dh], then z [F'], then m (1 float); heads one after another. F'
// is the feature map's output width. With grouped-query attention (G kv heads) the keys and values
// are G heads, and query head h reads kv head h / (H / G) (the LibTorch twin repeats them to H);
// the state stays per query head, since the key maps are per head (t2r, hedgehog). RoPE rotates q
// and k at the token's position (the pos argument; LinearAttentionState::pos in the twin).
// With --short-conv K the projections q, k, v (C = D + 2*G*Dh channels) first go through the
// causal depthwise convolution `conv.weight` [C,1,K], before RoPE, as in the twin's project(); the
// state then ends with the last K-1 raw projection rows, oldest first ([K-1][C], the twin's
// LinearAttentionState::conv).
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/fast_rope.h"
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/registry.h"

#include <cmath>
#include <limits>

namespace seqlab::infer {

namespace {

constexpr float kEps = 1e-6f;  // LinearAttentionImpl::kEps

class FastLinear : public FastMixer {
 public:
  FastLinear(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model),
        H_(cfg.n_head),
        G_(cfg.kv_heads()),
        Dh_(cfg.d_head()),
        Dkv_(G_ * Dh_),
        q_(w, "q", D_, D_),
        k_(w, "k", Dkv_, D_),
        v_(w, "v", Dkv_, D_),
        o_(w, "o", D_, D_),
        map_(make_fast_feature_map(cfg, w)),
        Fo_(map_->out_dim()),
        expo_(map_->exponential()),
        rope_(w.rope(cfg)),
        K_(cfg.short_conv),
        C_(D_ + 2 * Dkv_) {
    if (K_ > 0) conv_ = w.take("conv.weight", {C_, 1, K_});
  }
  int64_t head_state() const { return Fo_ * Dh_ + Fo_ + 1; }
  // The short convolution's tail of raw projections: (K-1) * C floats (0 without one).
  int64_t tail_size() const { return K_ > 0 ? (K_ - 1) * C_ : 0; }
  int64_t state_size() const override { return H_ * head_state() + tail_size(); }
  // q [D], k, v [G*Dh], attention output [D], phi(q), phi(k) [F'], one feature-map temporary
  // [Dh].
  int64_t scratch_size() const override { return 2 * D_ + 2 * Dkv_ + 2 * Fo_ + Dh_; }
  void reset(float* state) const override {
    const float m0 = expo_ ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t h = 0; h < H_; ++h) {
      float* s = state + h * head_state();
      std::fill(s, s + Fo_ * Dh_ + Fo_, 0.0f);
      s[Fo_ * Dh_ + Fo_] = m0;
    }
    float* tail = state + H_ * head_state();
    std::fill(tail, tail + tail_size(), 0.0f);
  }

  void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const override {
    float *q = scratch, *k = q + D_, *v = k + Dkv_, *att = v + Dkv_, *feat = att + D_;
    q_(x, q);
    k_(x, k);
    v_(x, v);
    if (K_ > 0) short_conv(q, k, v, state);
    if (rope_) rope_->rotate_qk(q, H_, k, G_, Dh_, 1, pos);
    recur(q, k, v, att, state, feat);
    o_(att, y);
  }
  int64_t prefill_scratch_size(int64_t n) const override {
    return 2 * n * D_ + 2 * n * Dkv_ + 2 * Fo_ + Dh_;
  }
  void prefill(const float* X, float* Y, int64_t n, int64_t, float* state, float* scratch,
               int64_t pos0) const override {
    float *Q = scratch, *K = Q + n * D_, *V = K + n * Dkv_, *A = V + n * Dkv_, *feat = A + n * D_;
    q_.prefill(X, Q, n);
    k_.prefill(X, K, n);
    v_.prefill(X, V, n);
    for (int64_t i = 0; K_ > 0 && i < n; ++i)
      short_conv(Q + i * D_, K + i * Dkv_, V + i * Dkv_, state);
    if (rope_) rope_->rotate_qk(Q, H_, K, G_, Dh_, n, pos0);
    for (int64_t i = 0; i < n; ++i)
      recur(Q + i * D_, K + i * Dkv_, V + i * Dkv_, A + i * D_, state, feat);
    o_.prefill(A, Y, n);
  }
  int64_t batch_scratch_size(int64_t B) const override { return prefill_scratch_size(B); }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t* pos) const override {
    float *Q = scratch, *K = Q + B * D_, *V = K + B * Dkv_, *A = V + B * Dkv_, *feat = A + B * D_;
    q_.rows(X, Q, B);
    k_.rows(X, K, B);
    v_.rows(X, V, B);
    for (int64_t i = 0; i < B; ++i) {
      if (K_ > 0) short_conv(Q + i * D_, K + i * Dkv_, V + i * Dkv_, states[i]);
      if (rope_) rope_->rotate_qk(Q + i * D_, H_, K + i * Dkv_, G_, Dh_, 1, pos[i]);
      recur(Q + i * D_, K + i * Dkv_, V + i * Dkv_, A + i * D_, states[i], feat);
    }
    o_.rows(A, Y, B);
  }

 private:
  // The short convolution over one token's projections q [D], k, v [G*Dh] (channels 0..D,
  // D..D+G*Dh, D+G*Dh..C of conv), in place.
  void short_conv(float* q, float* k, float* v, float* state) const {
    float* tail = state + H_ * head_state();  // [K-1][C], oldest first
    conv_channels(q, 0, D_, tail);
    conv_channels(k, D_, Dkv_, tail);
    conv_channels(v, D_ + Dkv_, Dkv_, tail);
  }
  // Channels c0 .. c0+n-1 of one token, x [n], in place: channel c becomes
  // sum_j conv[c][j] * (its input K-1-j tokens back), the tail holding the K-1 older inputs; then
  // the raw input joins that channel's tail and its oldest leaves.
  void conv_channels(float* x, int64_t c0, int64_t n, float* tail) const {
    for (int64_t i = 0; i < n; ++i) {
      const float* w = conv_.data() + (c0 + i) * K_;
      float* t = tail + c0 + i;  // t[j * C]: this channel's input K-1-j tokens back
      float acc = 0;
      for (int64_t j = 0; j + 1 < K_; ++j) acc += w[j] * t[j * C_];
      for (int64_t j = 0; j + 2 < K_; ++j) t[j * C_] = t[(j + 1) * C_];
      if (K_ > 1) t[(K_ - 2) * C_] = x[i];
      x[i] = acc + w[K_ - 1] * x[i];
    }
  }

  // One token's recurrence from its projections q [D], k, v [G*Dh]: advances every head's S, z
  // (and m) and writes the attention output att [D]. feat: scratch of 2F' + Dh floats.
  void recur(const float* q, const float* k, const float* v, float* att, float* state,
             float* feat) const {
    float *pq = feat, *pk = pq + Fo_, *tmp = pk + Fo_;
    const int64_t rep = H_ / G_;
    for (int64_t h = 0; h < H_; ++h) {
      float* S = state + h * head_state();
      float* z = S + Fo_ * Dh_;
      float& m = z[Fo_];
      const float* vh = v + (h / rep) * Dh_;
      float mk = 0;
      map_->apply(q + h * Dh_, h, true, pq, tmp, nullptr);
      map_->apply(k + (h / rep) * Dh_, h, false, pk, tmp, expo_ ? &mk : nullptr);
      if (expo_) {
        // Rescale the sums to the new running max, as online softmax does.
        const float m_new = std::max(m, mk);
        const float carry = std::exp(m - m_new);  // 0 before the first token (m = -inf)
        const float kscale = std::exp(mk - m_new);
        for (int64_t f = 0; f < Fo_ * Dh_; ++f) S[f] *= carry;
        for (int64_t f = 0; f < Fo_; ++f) {
          z[f] *= carry;
          pk[f] *= kscale;
        }
        m = m_new;
      }
      for (int64_t f = 0; f < Fo_; ++f) {
        axpy(pk[f], vh, S + f * Dh_, Dh_);
        z[f] += pk[f];
      }
      float* out = att + h * Dh_;
      std::fill(out, out + Dh_, 0.0f);
      float den = 0, rho = expo_ ? 0.0f : 1.0f;
      for (int64_t f = 0; f < Fo_; ++f) {
        axpy(pq[f], S + f * Dh_, out, Dh_);
        den += pq[f] * z[f];
        if (expo_) rho = std::max(rho, pq[f] * z[f]);
      }
      float norm = den + kEps * rho;
      if (norm == 0) norm = 1;  // numerator is 0 too: y = 0, not NaN
      for (int64_t d = 0; d < Dh_; ++d) out[d] /= norm;
    }
  }

  int64_t D_, H_, G_, Dh_, Dkv_;
  Dense q_, k_, v_, o_;
  std::unique_ptr<FastFeatureMap> map_;   // phi (infer/feature_maps/<map>.cpp)
  int64_t Fo_;                            // F' = map_->out_dim()
  bool expo_;                             // map_->exponential(): performer's running-max offset
  std::shared_ptr<const FastRope> rope_;  // null without RoPE
  int64_t K_, C_;                         // short convolution width (0: none), its channels
  std::vector<float> conv_;               // [C][K] (conv.weight [C,1,K]); empty without one
};

}  // namespace

SEQLAB_REGISTER_FAST_ARCH(LinearAttentionImpl,
                          [](const MixerConfig& cfg,
                             const Weights& w) -> std::unique_ptr<FastMixer> {
                            return std::make_unique<FastLinear>(cfg, w);
                          });

}  // namespace seqlab::infer
