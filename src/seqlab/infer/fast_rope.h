// Rotary position embeddings for the fast attention mixers (infer/mixers/softmax.cpp, linear.cpp):
// the same rotate-half rotation as mixers/rope.h, over plain fp32 buffers.
//
// cos and sin of angle(p, i) = float(p) * inv_freq_i (fp32, i < R/2) come from a table for
// positions 0 .. table_len-1 (the model's max_len), filled at load time by rope_tables(), so they
// are LibTorch's own values. A position past the table (linear attention has no length limit) is
// computed from the same fp32 inv_freq (computed at load time as rope_tables computes it) with
// std::cos / std::sin, into a buffer that is kept for the next caller asking for the same
// positions: the layers of one model share one FastRope, so a step computes them once, not once
// per layer. That buffer makes a FastRope, like a FastModel, single-threaded.
#pragma once

#include "seqlab/mixers/mixer_config.h"

#include <cstdint>
#include <vector>

namespace seqlab::infer {

class FastRope {
 public:
  // cfg.rope must be set; R = cfg.rope_dims().
  FastRope(const MixerConfig& cfg, int64_t table_len);
  int64_t dims() const { return R_; }
  int64_t table_len() const { return L_; }
  // Rows for positions p0 .. p0+n-1, R floats each: cos of the R/2 angles, then their sin.
  // Valid until the next call with other positions.
  const float* rows(int64_t p0, int64_t n) const;
  // Rotates the first R dims of each of `heads` heads of x [heads * Dh] by one row of rows():
  // x1 = x[:R/2], x2 = x[R/2:R] -> x1 cos - x2 sin, x2 cos + x1 sin; dims R.. are untouched.
  void rotate(float* x, int64_t heads, int64_t Dh, const float* row) const;
  // n tokens' queries Q [n, H*Dh] and keys K [n, G*Dh] at positions pos0 .. pos0+n-1.
  void rotate_qk(float* Q, int64_t H, float* K, int64_t G, int64_t Dh, int64_t n,
                 int64_t pos0) const;

 private:
  int64_t R_, L_;
  std::vector<float> inv_freq_;  // [R/2]
  std::vector<float> table_;     // [L][R]: cos, sin of positions 0 .. L-1
  // Rows past the table: the last positions asked for.
  mutable std::vector<float> extra_;
  mutable int64_t extra_p0_ = -1, extra_n_ = 0;
};

}  // namespace seqlab::infer
