// Fast softmax attention: the KV cache, preallocated for max_len tokens.
// State: K [H][max_len][Dh] then V [H][max_len][Dh]: head-major, so one head's keys are a
// contiguous matrix and its scores are one matrix-vector product.
#include "seqlab/core/error.h"
#include "seqlab/infer/fast_mixer.h"

#include <cmath>

namespace seqlab::infer {

namespace {

class FastSoftmax : public FastMixer {
 public:
  FastSoftmax(const MixerConfig& cfg, const Weights& w)
      : D_(cfg.d_model), H_(cfg.n_head), Dh_(cfg.d_head()), L_(cfg.max_len),
        q_(w, "q", D_, D_), k_(w, "k", D_, D_), v_(w, "v", D_, D_), o_(w, "o", D_, D_) {}
  int64_t state_size() const override { return 2 * L_ * D_; }
  int64_t scratch_size() const override { return 2 * D_ + L_; }
  void reset(float* state) const override { std::fill(state, state + state_size(), 0.0f); }
  void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const override {
    SEQLAB_CHECK(pos < L_, "softmax attention: the KV cache is full (max_len = {}); cannot step token {}",
                 L_, pos + 1);
    float* K = state;
    float* V = state + L_ * D_;
    float* q = scratch;
    float* att = scratch + D_;
    float* p = scratch + 2 * D_;
    q_(x, q);
    k_(x, att);  // att holds k_t, then v_t, before it holds the attention output
    for (int64_t h = 0; h < H_; ++h)
      std::copy(att + h * Dh_, att + (h + 1) * Dh_, K + (h * L_ + pos) * Dh_);
    v_(x, att);
    for (int64_t h = 0; h < H_; ++h)
      std::copy(att + h * Dh_, att + (h + 1) * Dh_, V + (h * L_ + pos) * Dh_);
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh_));
    for (int64_t h = 0; h < H_; ++h) {
      float* qh = q + h * Dh_;
      for (int64_t d = 0; d < Dh_; ++d) qh[d] *= scale;
      matvec(K + h * L_ * Dh_, nullptr, qh, p, pos + 1, Dh_);  // scores of keys 0..pos
      softmax(p, pos + 1);
      vecmat(V + h * L_ * Dh_, p, att + h * Dh_, pos + 1, Dh_);  // weights times values
    }
    o_(att, y);
  }

 private:
  int64_t D_, H_, Dh_, L_;
  Dense q_, k_, v_, o_;
};

}  // namespace

std::unique_ptr<FastMixer> make_fast_softmax(const MixerConfig& cfg, const Weights& w) {
  return std::make_unique<FastSoftmax>(cfg, w);
}

}  // namespace seqlab::infer
