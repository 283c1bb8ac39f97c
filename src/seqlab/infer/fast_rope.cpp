#include "seqlab/infer/fast_rope.h"

#include "seqlab/core/error.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/mixers/rope.h"

#include <cmath>

namespace seqlab::infer {

FastRope::FastRope(const MixerConfig& cfg, int64_t table_len) : R_(cfg.rope_dims()), L_(table_len) {
  SEQLAB_CHECK(cfg.rope && R_ >= 2, "fast decoder: RoPE tables for a mixer without --rope");
  SEQLAB_CHECK(L_ >= 0, "fast decoder: RoPE table of {} positions", L_);
  const int64_t half = R_ / 2;
  // inv_freq exactly as mixers/rope.cpp (transformers) computes it: fp32 theta ** (2i / R).
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  auto exponent =
      torch::arange(0, R_, 2, torch::kInt64).to(torch::kFloat32) / static_cast<float>(R_);
  auto inv = (1.0 / torch::pow(torch::scalar_tensor(cfg.rope_theta, f32), exponent)).contiguous();
  inv_freq_.assign(inv.data_ptr<float>(), inv.data_ptr<float>() + half);
  table_.resize(static_cast<size_t>(L_ * R_));
  if (L_ > 0) {
    auto [cos, sin] = rope_tables(cfg, 0, L_);  // [L,R], the R/2 angles twice
    auto rows = torch::cat({cos.narrow(1, 0, half), sin.narrow(1, 0, half)}, 1).contiguous();
    std::copy(rows.data_ptr<float>(), rows.data_ptr<float>() + L_ * R_, table_.begin());
  }
  extra_.resize(static_cast<size_t>(64 * R_));  // a prefill chunk of rows, grown if asked for more
}

const float* FastRope::rows(int64_t p0, int64_t n) const {
  if (p0 >= 0 && p0 + n <= L_) return table_.data() + p0 * R_;
  if (p0 == extra_p0_ && n <= extra_n_) return extra_.data();
  if (static_cast<int64_t>(extra_.size()) < n * R_) extra_.resize(static_cast<size_t>(n * R_));
  const int64_t half = R_ / 2;
  for (int64_t t = 0; t < n; ++t) {
    float* row = extra_.data() + t * R_;
    const auto p = static_cast<float>(p0 + t);  // as rope_tables: arange(int64).to(fp32)
    for (int64_t i = 0; i < half; ++i) {
      const float a = p * inv_freq_[i];
      row[i] = std::cos(a);
      row[half + i] = std::sin(a);
    }
  }
  extra_p0_ = p0;
  extra_n_ = n;
  return extra_.data();
}

void FastRope::rotate(float* x, int64_t heads, int64_t Dh, const float* row) const {
  const int64_t half = R_ / 2;
  for (int64_t h = 0; h < heads; ++h) rope_rotate(x + h * Dh, row, row + half, half);
}

void FastRope::rotate_qk(float* Q, int64_t H, float* K, int64_t G, int64_t Dh, int64_t n,
                         int64_t pos0) const {
  const float* r = rows(pos0, n);
  for (int64_t i = 0; i < n; ++i) {
    rotate(Q + i * H * Dh, H, Dh, r + i * R_);
    rotate(K + i * G * Dh, G, Dh, r + i * R_);
  }
}

}  // namespace seqlab::infer
