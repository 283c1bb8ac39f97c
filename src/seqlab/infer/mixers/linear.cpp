// Fast causal linear attention with every feature map (mixers/linear_attention.h has the maths:
// the same normalizer phi(q).S / (phi(q).z + eps * rho) and, for performer, the same running-max
// key offset m).
// State per head h: S [F'][Dh], then z [F'], then m (1 float); heads one after another. F' is the
// feature map's output width.
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/feature_maps/feature_map.h"

#include <cmath>
#include <limits>

namespace seqlab::infer {

namespace {

constexpr float kEps = 1e-6f;  // LinearAttentionImpl::kEps

class FastLinear : public FastMixer {
 public:
  FastLinear(const MixerConfig& cfg, const Weights& w)
      : map_(cfg.feature_map),
        D_(cfg.d_model),
        H_(cfg.n_head),
        Dh_(cfg.d_head()),
        F_(feature_dim(cfg)),
        q_(w, "q", D_, D_),
        k_(w, "k", D_, D_),
        v_(w, "v", D_, D_),
        o_(w, "o", D_, D_) {
    if (map_ == "elu1" || map_ == "relu") {
      Fo_ = Dh_;
    } else if (map_ == "rfa") {
      Fo_ = 2 * F_;
      wq_ = w.take("feature_map.w", {H_, F_, Dh_});
    } else if (map_ == "performer") {
      Fo_ = F_;
      wq_ = w.take("feature_map.w", {H_, F_, Dh_});
    } else if (map_ == "t2r") {
      Fo_ = F_;
      wq_ = w.take("feature_map.w", {H_, F_, Dh_});
      bq_ = w.take("feature_map.b", {H_, F_});
    } else if (map_ == "hedgehog") {
      Fo_ = 2 * F_;
      wq_ = w.take("feature_map.wq", {H_, F_, Dh_});
      bq_ = w.take("feature_map.bq", {H_, F_});
      wk_ = w.take("feature_map.wk", {H_, F_, Dh_});
      bk_ = w.take("feature_map.bk", {H_, F_});
    } else {
      fail("fast decoder: unknown feature map '{}'", map_);
    }
  }
  int64_t head_state() const { return Fo_ * Dh_ + Fo_ + 1; }
  int64_t state_size() const override { return H_ * head_state(); }
  // q, k, v, attention output [D each], phi(q), phi(k) [F'], one feature-map temporary [Dh].
  int64_t scratch_size() const override { return 4 * D_ + 2 * Fo_ + Dh_; }
  void reset(float* state) const override {
    const float m0 = map_ == "performer" ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t h = 0; h < H_; ++h) {
      float* s = state + h * head_state();
      std::fill(s, s + Fo_ * Dh_ + Fo_, 0.0f);
      s[Fo_ * Dh_ + Fo_] = m0;
    }
  }

  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float *q = scratch, *k = q + D_, *v = k + D_, *att = v + D_, *feat = att + D_;
    q_(x, q);
    k_(x, k);
    v_(x, v);
    recur(q, k, v, att, state, feat);
    o_(att, y);
  }
  int64_t prefill_scratch_size(int64_t n) const override { return 4 * n * D_ + 2 * Fo_ + Dh_; }
  void prefill(const float* X, float* Y, int64_t n, int64_t, float* state, float* scratch,
               int64_t) const override {
    float *Q = scratch, *K = Q + n * D_, *V = K + n * D_, *A = V + n * D_, *feat = A + n * D_;
    matmul_rows(q_.w.data(), q_.b.empty() ? nullptr : q_.b.data(), X, Q, n, D_, D_);
    matmul_rows(k_.w.data(), k_.b.empty() ? nullptr : k_.b.data(), X, K, n, D_, D_);
    matmul_rows(v_.w.data(), v_.b.empty() ? nullptr : v_.b.data(), X, V, n, D_, D_);
    for (int64_t i = 0; i < n; ++i)
      recur(Q + i * D_, K + i * D_, V + i * D_, A + i * D_, state, feat);
    matmul_rows(o_.w.data(), o_.b.empty() ? nullptr : o_.b.data(), A, Y, n, D_, D_);
  }

 private:
  // One token's recurrence from its projections q, k, v [D]: advances every head's S, z (and m)
  // and writes the attention output att [D]. feat: scratch of 2F' + Dh floats.
  void recur(const float* q, const float* k, const float* v, float* att, float* state,
             float* feat) const {
    float *pq = feat, *pk = pq + Fo_, *tmp = pk + Fo_;
    const bool expo = map_ == "performer";
    for (int64_t h = 0; h < H_; ++h) {
      float* S = state + h * head_state();
      float* z = S + Fo_ * Dh_;
      float& m = z[Fo_];
      const float* vh = v + h * Dh_;
      float mk = 0;
      features(q + h * Dh_, h, true, pq, tmp, nullptr);
      features(k + h * Dh_, h, false, pk, tmp, expo ? &mk : nullptr);
      if (expo) {
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
      float den = 0, rho = expo ? 0.0f : 1.0f;
      for (int64_t f = 0; f < Fo_; ++f) {
        axpy(pq[f], S + f * Dh_, out, Dh_);
        den += pq[f] * z[f];
        if (expo) rho = std::max(rho, pq[f] * z[f]);
      }
      float norm = den + kEps * rho;
      if (norm == 0) norm = 1;  // numerator is 0 too: y = 0, not NaN
      for (int64_t d = 0; d < Dh_; ++d) out[d] /= norm;
    }
  }

  // phi of one head's query or key x [Dh] -> out [F']. For performer, the key's max log-feature
  // is returned in *max_log and removed; the query's max is removed (it cancels in the ratio).
  void features(const float* x, int64_t h, bool is_query, float* out, float* tmp,
                float* max_log) const {
    if (map_ == "elu1") {
      for (int64_t d = 0; d < Dh_; ++d) out[d] = x[d] > 0 ? x[d] + 1.0f : std::exp(x[d]);
    } else if (map_ == "relu") {
      for (int64_t d = 0; d < Dh_; ++d) out[d] = std::max(x[d], 0.0f);
    } else if (map_ == "rfa") {
      float n = std::sqrt(dot(x, x, Dh_));
      n = std::max(n, 1e-12f);
      for (int64_t d = 0; d < Dh_; ++d) tmp[d] = x[d] / n;
      matvec(wq_.data() + h * F_ * Dh_, nullptr, tmp, out, F_, Dh_);
      const float scale = 1.0f / std::sqrt(static_cast<float>(F_));
      for (int64_t f = 0; f < F_; ++f) {
        const float a = out[f];
        out[f] = std::sin(a) * scale;
        out[F_ + f] = std::cos(a) * scale;
      }
    } else if (map_ == "performer") {
      const float s = std::pow(static_cast<float>(Dh_), -0.25f);
      for (int64_t d = 0; d < Dh_; ++d) tmp[d] = x[d] * s;
      const float half_sq = 0.5f * dot(tmp, tmp, Dh_);
      const float half_log_f = 0.5f * std::log(static_cast<float>(F_));
      matvec(wq_.data() + h * F_ * Dh_, nullptr, tmp, out, F_, Dh_);
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t f = 0; f < F_; ++f) mx = std::max(mx, out[f] -= half_sq + half_log_f);
      for (int64_t f = 0; f < F_; ++f) out[f] = std::exp(out[f] - mx);
      if (max_log) *max_log = mx;
    } else if (map_ == "t2r") {
      matvec(wq_.data() + h * F_ * Dh_, bq_.data() + h * F_, x, out, F_, Dh_);
      for (int64_t f = 0; f < F_; ++f) out[f] = std::max(out[f], 0.0f);
    } else {  // hedgehog
      const auto& W = is_query ? wq_ : wk_;
      const auto& B = is_query ? bq_ : bk_;
      matvec(W.data() + h * F_ * Dh_, B.data() + h * F_, x, out, F_, Dh_);
      for (int64_t f = 0; f < F_; ++f) out[F_ + f] = -out[f];
      softmax(out, F_);
      softmax(out + F_, F_);
    }
  }

  std::string map_;
  int64_t D_, H_, Dh_, F_, Fo_ = 0;
  Dense q_, k_, v_, o_;
  std::vector<float> wq_, bq_, wk_, bk_;  // feature-map parameters (wq_/bq_ also rfa/perf/t2r)
};

}  // namespace

std::unique_ptr<FastMixer> make_fast_linear(const MixerConfig& cfg, const Weights& w) {
  return std::make_unique<FastLinear>(cfg, w);
}

}  // namespace seqlab::infer
