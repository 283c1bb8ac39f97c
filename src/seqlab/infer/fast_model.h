// The fast decoder: a causal LM from a model directory, run one token at a time over plain fp32
// buffers (infer/kernels.h, infer/fast_mixer.h), with no LibTorch op and no heap allocation in
// the token loop. The whole recurrent state (every layer's S/z, h/c or KV cache, and the
// position) lives in one DecoderState that can be copied to branch a generation, and saved to a
// file and loaded to resume one (a resumed generation equals an uninterrupted one).
//
// Equals SeqModel::step (and forward) at every position: tests/test_fast_decoder.cpp.
#pragma once

#include "seqlab/core/quant.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/model/model.h"

#include <memory>
#include <string>
#include <vector>

namespace seqlab::infer {

// Why the fast decoder cannot run this model, or "" when it can. It runs causal lm-head models
// whose mixer has a fast form (infer/mixers/), with no unmerged adapters, and refuses any config
// field it does not implement: every ModelConfig / MixerConfig field outside the list it was
// written for (kFastFields in fast_model.cpp) must hold its default, so a field added later (a
// mixture of experts, an equilibrium block, ...) is refused by name until the fast decoder learns
// it. The reason is one line, e.g. "its head is 'tag' (the fast decoder runs lm heads only)".
std::string fast_support(const ModelConfig& cfg);
std::string fast_support(SeqModelImpl& model);  // the config's reason, then adapters

struct DecoderState {
  std::vector<float> data;  // every layer's state, one after another
  int64_t pos = 0;          // tokens consumed
};

class FastModel {
 public:
  // Copies the weights of an lm-head model (adapters must be merged first); a model
  // fast_support() refuses is a seqlab::Error naming the reason. `weights` (core/quant.h) is the
  // format of every projection, MLP matrix and the LM head (infer/kernels_quant.h); the token
  // embedding, norms, biases, feature maps and the RNN cells' matrices stay fp32.
  explicit FastModel(SeqModelImpl& model, WeightFormat weights = WeightFormat::f32);

  const ModelConfig& config() const { return cfg_; }
  WeightFormat weight_format() const { return format_; }
  int64_t vocab_size() const { return V_; }
  int64_t state_size() const { return state_size_; }

  DecoderState init_state() const;
  // Consumes one token; writes the next-token logits [V]. Not thread-safe (shared scratch): one
  // FastModel per thread.
  void step(int64_t token, DecoderState& s, float* logits);
  // Consumes n prompt tokens in chunks of kPrefillChunk (projections and MLPs as matrix-matrix
  // products); logits (if not null) get those after the last one. Equals n step() calls.
  void prefill(const int64_t* tokens, int64_t n, DecoderState& s, float* logits);
  static constexpr int64_t kPrefillChunk = 64;
  // One token for each of B independent sequences (continuous batching): tokens [B], states [B]
  // (distinct, each advanced by one position; rows may sit at different positions), logits
  // [B,V] (may be null). Every projection, MLP and the head run as one matrix-matrix product over
  // the B rows (one pass over the weights), in every mixer (FastMixer::step_batch); each mixer's
  // recurrence or attention runs per row. Bitwise equal to B step() calls
  // (tests/test_fast_batch.cpp): the products are matmul_rows_blocked's register tiles, which sum
  // every output in matvec's order. Scratch grows to the largest B seen (an allocation only then).
  void step_batch(const int64_t* tokens, DecoderState* const* states, int64_t B, float* logits);

  // A state at its used size, for keeping between requests (the server's session cache): every
  // softmax KV cache cut to its pos written rows, every other mixer's state whole (it is constant
  // in the sequence's length). unpack_state(pack_state(s)) equals s, float for float (the KV rows
  // past pos are init_state()'s zeros); a packed state of the wrong size is a seqlab::Error.
  DecoderState pack_state(const DecoderState& s) const;
  DecoderState unpack_state(const DecoderState& packed) const;
  int64_t packed_size(int64_t pos) const;  // floats of a packed state after pos tokens

  // The state as a file (safetensors: "state" fp32, "pos" int64, metadata naming the model
  // config); load checks that it belongs to this model.
  void save_state(const std::string& path, const DecoderState& s) const;
  DecoderState load_state(const std::string& path) const;
  // load_state on a file's contents (any bytes); `name` is quoted in errors. The fuzz target
  // fuzz/fuzz_state.cpp calls it directly.
  DecoderState load_state_bytes(std::string_view bytes, const std::string& name) const;

 private:
  struct Block {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;  // the biases are empty for RMSNorm
    std::unique_ptr<FastMixer> mixer;
    int64_t state_offset = 0;
    // The MLP (fc1.out == 0: none). Plain: fc1 [I,D], activation, fc2 [D,I]. SwiGLU: fc1 holds
    // gate and up stacked, [2I,D] (one product for both), then silu(gate) * up, fc2 = down [D,I].
    Dense fc1, fc2;
  };
  ModelConfig cfg_;
  std::string pos_;                                 // learned | sinusoidal | none
  int64_t D_ = 0, V_ = 0, I_ = 0, state_size_ = 0;  // I_: MLP width (0 = no MLP)
  bool rms_ = false, swiglu_ = false, parallel_ = false;
  WeightFormat format_ = WeightFormat::f32;
  std::vector<float> wte_, wpe_, lnf_w_, lnf_b_, head_;  // head_ empty when tied or not f32
  QuantMatrix qhead_;                                    // the head in format_ when it is not f32
  // logits [n, V] of n final-normed rows H [n, D]; batch: as mlp()'s.
  void head(const float* H, float* logits, int64_t n) const;
  std::vector<Block> blocks_;
  // Scratch for one token: residual x, normed h, mixer output y, MLP output y2 (parallel
  // residual), MLP hidden, mixer scratch.
  std::vector<float> x_, h_, y_, y2_, mlp_, mix_scratch_;
  // Scratch for a prefill chunk: residual rows, normed rows, mixer/MLP output rows, MLP output rows
  // (parallel residual), MLP hidden rows, the mixers' prefill scratch.
  std::vector<float> cx_, ch_, cy_, cy2_, cm_, cscratch_;
  // Scratch for step_batch, as the chunk's, for batch_cap_ rows; row state pointers, positions.
  std::vector<float> bx_, bh_, by_, by2_, bm_, bscratch_;
  std::vector<float*> bstates_;
  std::vector<int64_t> bpos_;
  int64_t batch_cap_ = 0;
  void reserve_batch(int64_t B);
  // One block over n rows X [n,D] (the residual, updated in place), with the given scratch
  // (H, Y [n,D], Y2 [n,D] for the parallel residual, M [n, fc1.out]); mix(H, Y) runs the mixer;
  // batch as mlp()'s.
  template <class Mix>
  void block_with(Block& b, float* X, int64_t n, float* H, float* Y, float* Y2, float* M,
                  bool batch, Mix&& mix);
  // The block's norm (LayerNorm or RMSNorm, norm_eps) of x [D] into y [D].
  void norm(const float* x, const std::vector<float>& w, const std::vector<float>& b,
            float* y) const;
  // The block's MLP on n rows H [n,D] -> Y [n,D]; M: n * fc1.out floats of hidden scratch.
  // batch: the rows are a step_batch's (matmul_rows_blocked), else a prefill chunk's (matmul_rows).
  void mlp(const Block& b, const float* H, float* Y, float* M, int64_t n, bool batch) const;
  // One block over n rows X [n,D] (the residual, updated in place) at positions pos0 ...
  void block_rows(Block& b, float* X, int64_t n, float* state, int64_t pos0);
  // Token embedding (+ position) of `token` at position p into x [D]; checks both.
  void embed(int64_t token, int64_t p, float* x) const;
  // The checks of load_state on a parsed file.
  DecoderState state_from(SafetensorsFile&& f, const std::string& path) const;
};

}  // namespace seqlab::infer
