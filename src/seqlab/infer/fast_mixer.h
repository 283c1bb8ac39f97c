// The fast decoder's mixers: one token at a time over plain fp32 buffers, no LibTorch op and no
// heap allocation per token. Each mixer copies the weights it needs when it is built and keeps its
// recurrent state in a caller-owned float buffer of state_size() floats (so a whole model's state
// is one contiguous buffer that can be saved, restored and cloned), using scratch_size() floats of
// caller-owned scratch per step.
//
// The state layout is each mixer's own business, documented in its file; reset() writes the state
// before the first token. Every mixer equals its LibTorch twin's step()
// (tests/test_fast_decoder.cpp for the attention mixers, tests/test_fast_mixers.cpp for the
// recurrent ones).
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/infer/kernels_quant.h"
#include "seqlab/mixers/mixer_config.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace seqlab::infer {

class FastRope;

// A mixer's parameters and buffers as fp32 copies, by their names inside the mixer ("q.weight",
// "feature_map.w", "w_hh.bias", ...).
// Also carries what the layers of one model share: the rotary tables (infer/fast_rope.h).
class Weights {
 public:
  explicit Weights(const TensorMap& tensors, std::shared_ptr<const FastRope> rope = nullptr,
                   WeightFormat format = WeightFormat::f32)
      : t_(tensors), rope_(std::move(rope)), format_(format) {}
  // The format the Dense matrices built from these weights take (core/quant.h).
  WeightFormat format() const { return format_; }
  // The named tensor's values, checked against the expected shape (seqlab::Error otherwise).
  std::vector<float> take(const std::string& name, const std::vector<int64_t>& shape) const;
  bool has(const std::string& name) const { return t_.count(name) != 0; }
  // The model's shared RoPE tables for cfg (cfg.rope), or new ones (a mixer built on its own);
  // null without RoPE.
  std::shared_ptr<const FastRope> rope(const MixerConfig& cfg) const;

 private:
  TensorMap t_;
  std::shared_ptr<const FastRope> rope_;
  WeightFormat format_ = WeightFormat::f32;
};

// y = W x + b with owned weights, in the format Weights::format() names (core/quant.h): fp32 in
// `w`, or bf16 / int8 in `qw` (infer/kernels_quant.h; `w` is then empty). Mixers run their
// products through these methods, never on `w` directly, so every format reaches every product.
struct Dense {
  std::vector<float> w, b;  // [out, in], [out] (b may be empty)
  int64_t out = 0, in = 0;
  QuantMatrix qw;  // format bf16 / int8 only
  Dense() = default;
  // Reads "<name>.weight" [out,in] and, when present, "<name>.bias" [out], then converts the
  // weights to wt.format().
  Dense(const Weights& wt, const std::string& name, int64_t out, int64_t in);
  // Converts fp32 `w` to `format` (f32: nothing to do).
  void convert(WeightFormat format);
  WeightFormat format() const { return qw.format; }
  int64_t weight_bytes() const {
    return qw.format == WeightFormat::f32 ? out * in * 4 : qw.bytes();
  }
  void operator()(const float* x, float* y) const {
    if (qw.format != WeightFormat::f32)
      quant_matmul(qw, bias(), x, y, 1);
    else
      matvec(w.data(), bias(), x, y, out, in);
  }
  // The same for n rows X [n,in] -> Y [n,out] of a batched step (matmul_rows_blocked: one pass
  // over the weights, each row bitwise operator()'s).
  void rows(const float* X, float* Y, int64_t n) const {
    if (qw.format != WeightFormat::f32)
      quant_matmul(qw, bias(), X, Y, n);
    else
      matmul_rows_blocked(w.data(), bias(), X, Y, n, out, in);
  }
  // n rows of a prefill chunk (fp32: matmul_rows, which may tile differently from rows()).
  void prefill(const float* X, float* Y, int64_t n) const {
    if (qw.format != WeightFormat::f32)
      quant_matmul(qw, bias(), X, Y, n);
    else
      matmul_rows(w.data(), bias(), X, Y, n, out, in);
  }
  const float* bias() const { return b.empty() ? nullptr : b.data(); }
};

class FastMixer {
 public:
  virtual ~FastMixer() = default;
  virtual int64_t state_size() const = 0;    // floats of recurrent state per sequence
  virtual int64_t scratch_size() const = 0;  // floats of scratch one step needs
  virtual void reset(float* state) const = 0;
  // One token: x [D] -> y [D] (x and y do not alias); advances state. pos is the token's index.
  virtual void step(const float* x, float* y, float* state, float* scratch, int64_t pos) const = 0;
  // n tokens at once (a prompt chunk): X [n,D] -> Y [n,D], advancing the state over positions
  // pos0 .. pos0+n-1; equal to n step() calls. The default is that loop; mixers whose cost is
  // mostly projections override it to run them as matrix-matrix products.
  virtual void prefill(const float* X, float* Y, int64_t n, int64_t D, float* state, float* scratch,
                       int64_t pos0) const {
    for (int64_t i = 0; i < n; ++i) step(X + i * D, Y + i * D, state, scratch, pos0 + i);
  }
  // Scratch floats prefill() needs for n tokens.
  virtual int64_t prefill_scratch_size(int64_t n) const { return scratch_size(); }
  // One token for each of B independent sequences (the server's continuous batch): row i of
  // X [B,D] -> row i of Y [B,D], advancing states[i] at position pos[i]; equal to B step() calls.
  // The default is that loop; every mixer here overrides it to run its projections as
  // matrix-matrix products over the rows (one pass over the weights), the recurrence per row.
  virtual void step_batch(const float* X, float* Y, int64_t B, int64_t D, float* const* states,
                          float* scratch, const int64_t* pos) const {
    for (int64_t i = 0; i < B; ++i) step(X + i * D, Y + i * D, states[i], scratch, pos[i]);
  }
  // Scratch floats step_batch() needs for B rows.
  virtual int64_t batch_scratch_size(int64_t B) const { return scratch_size(); }
  // The state as kept between requests (the server's session cache) after pos tokens: the floats
  // that can differ from reset()'s. The default is the whole state; softmax attention keeps only
  // the pos rows of its KV cache that it has written. unpack(pack(s)) restores s exactly.
  virtual int64_t packed_size(int64_t pos) const { return state_size(); }
  virtual void pack(const float* state, int64_t pos, float* out) const {
    std::copy(state, state + state_size(), out);
  }
  virtual void unpack(const float* in, int64_t pos, float* state) const {
    std::copy(in, in + state_size(), state);
  }
};

// A recurrent mixer whose state starts with h [D] and whose step is h' = f(w_ih x, w_hh h, state),
// y = o(h') (the Elman RNN, GRU, LSTM; w_ih and w_hh [G*D, D] with G gates). This holds the
// projections, step() and the batched step (every row's h gathered, w_ih and w_hh as products over
// the B rows, update() per row, o over the new h rows) around the subclass's update().
class FastGatedRnn : public FastMixer {
 public:
  FastGatedRnn(const Weights& w, int64_t D, int64_t gates)
      : D_(D), w_ih_(w, "w_ih", gates * D, D), w_hh_(w, "w_hh", gates * D, D), o_(w, "o", D, D) {}
  // Input side w_ih x and hidden side w_hh h, G*D floats each.
  int64_t scratch_size() const override { return 2 * w_ih_.out; }
  void step(const float* x, float* y, float* state, float* scratch, int64_t) const override {
    float *xi = scratch, *hh = scratch + w_ih_.out;
    w_ih_(x, xi);
    w_hh_(state, hh);  // reads the old h, so update() may overwrite it
    update(xi, hh, state);
    o_(state, y);
  }
  int64_t batch_scratch_size(int64_t B) const override { return 2 * B * w_ih_.out + 2 * B * D_; }
  void step_batch(const float* X, float* Y, int64_t B, int64_t, float* const* states,
                  float* scratch, const int64_t*) const override {
    const int64_t G = w_ih_.out;
    float *XI = scratch, *HH = XI + B * G, *Hs = HH + B * G, *Hn = Hs + B * D_;
    for (int64_t i = 0; i < B; ++i) std::copy(states[i], states[i] + D_, Hs + i * D_);
    w_ih_.rows(X, XI, B);
    w_hh_.rows(Hs, HH, B);
    for (int64_t i = 0; i < B; ++i) {
      update(XI + i * G, HH + i * G, states[i]);
      std::copy(states[i], states[i] + D_, Hn + i * D_);
    }
    o_.rows(Hn, Y, B);
  }

 protected:
  // The new state (h first) from the gates' input side xi and hidden side hh, G*D floats each.
  virtual void update(const float* xi, const float* hh, float* state) const = 0;
  int64_t D_;
  Dense w_ih_, w_hh_, o_;  // o_ is the output projection (the module member `o`)
};

// Builds the fast twin of cfg's mixer from its weights, through the architecture registry
// (mixers/registry.h; each infer/mixers/<name>.cpp registers its factory). A mixer without one is
// a seqlab::Error.
std::unique_ptr<FastMixer> make_fast_mixer(const MixerConfig& cfg, const Weights& w);

}  // namespace seqlab::infer
