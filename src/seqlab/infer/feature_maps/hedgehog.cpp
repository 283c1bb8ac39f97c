// Fast hedgehog (mixers/feature_maps/hedgehog.h): phi(x) = [softmax(W_h x + b_h), softmax(-W_h x -
// b_h)] with separate query (feature_map.wq, bq) and key (feature_map.wk, bk) maps; F' = 2F.
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/hedgehog.h"

namespace seqlab::infer {

namespace {

class FastHedgehog : public FastFeatureMap {
 public:
  FastHedgehog(const MixerConfig& cfg, const Weights& w)
      : Dh_(cfg.d_head()),
        F_(feature_dim(cfg)),
        wq_(w.take("feature_map.wq", {cfg.n_head, F_, Dh_})),
        bq_(w.take("feature_map.bq", {cfg.n_head, F_})),
        wk_(w.take("feature_map.wk", {cfg.n_head, F_, Dh_})),
        bk_(w.take("feature_map.bk", {cfg.n_head, F_})) {}
  int64_t out_dim() const override { return 2 * F_; }
  void apply(const float* x, int64_t h, bool is_query, float* out, float*, float*) const override {
    const auto& W = is_query ? wq_ : wk_;
    const auto& B = is_query ? bq_ : bk_;
    matvec(W.data() + h * F_ * Dh_, B.data() + h * F_, x, out, F_, Dh_);
    for (int64_t f = 0; f < F_; ++f) out[F_ + f] = -out[f];
    softmax(out, F_);
    softmax(out + F_, F_);
  }

 private:
  int64_t Dh_, F_;
  std::vector<float> wq_, bq_, wk_, bk_;  // [H,F,Dh], [H,F] for queries, then keys
};

}  // namespace

SEQLAB_REGISTER_FAST_FEATURE_MAP(HedgehogImpl, [](const MixerConfig& cfg, const Weights& w) {
  return std::unique_ptr<FastFeatureMap>(std::make_unique<FastHedgehog>(cfg, w));
});

}  // namespace seqlab::infer
