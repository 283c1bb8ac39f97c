// Decoding engines behind one interface, so `seqlab generate` and `seqlab bench decode` run the
// same loop (and the same sampler) on either:
//
//   fast   the hand-written decoder (infer/fast_model.h): fp32 loops, no LibTorch op per token
//   torch  SeqModel::step, the LibTorch recurrent form, one token at a time (batch 1)
//
// Both consume tokens one at a time and give the next-token logits [V]; for the same model they
// agree to rounding, so greedy decoding gives the same tokens on both.
//
// Saved states (fast engine only). A generation's state file is FastModel::save_state's file with
// one more metadata entry, "pending_token": the last token of the text that the state has NOT
// consumed yet. A state alone cannot give the next-token logits (they depend on the last token's
// own embedding through the residual stream), so the last sampled token stays pending: a resumed
// generation consumes it first, then any new prompt, and samples from there, exactly as the
// uninterrupted one would have.
#pragma once

#include "seqlab/core/quant.h"
#include "seqlab/model/model.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace seqlab::infer {

class FastModel;  // infer/fast_model.h
struct DecoderState;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t pos() const = 0;  // tokens consumed so far (the next token's position)
  // Consumes n >= 0 tokens; when logits is not null and n > 0 it gets the logits [V] after the
  // last one.
  virtual void prefill(const int64_t* tokens, int64_t n, float* logits) = 0;
  // Consumes one token and writes the logits [V] after it.
  virtual void step(int64_t token, float* logits) = 0;
  // The state plus the pending (not yet consumed) token; see the header comment. The torch
  // engine has none (seqlab::Error).
  virtual void save_state(const std::string& path, int64_t pending) const;
  // Replaces the state with the file's (an error if it belongs to another model); returns the
  // pending token, or -1 when the file carries none.
  virtual int64_t load_state(const std::string& path);
  // Bytes of recurrent state (KV cache, S/z, h/c...) this engine holds for its sequence.
  virtual int64_t state_bytes() const = 0;
};

// A generation's state file, what --save-state writes (see the header comment): the fast
// decoder's state file plus the pending token (-1: none). load_generation_state replaces s with
// the file's state (an error if it belongs to another model) and returns the pending token.
void save_generation_state(const FastModel& fm, const DecoderState& s, int64_t pending,
                           const std::string& path);
int64_t load_generation_state(const FastModel& fm, const std::string& path, DecoderState& s);

// The tokens a generation consumes before sampling: the state's pending token (-1: none), then the
// prompt, or the end-of-text token that `eos` returns (empty: none) when both are empty at
// position 0 (a new document); `eos` is called only then, so a tokenizer without an end-of-text
// token still continues a prompt. Checks, with seqlab generate's messages, that there is something
// to consume and that they and `max_new` sampled tokens fit `limit` (max_sequence; -1: unbounded)
// after `pos` consumed tokens; `resumed` says a state was loaded. The last sampled token stays
// pending (not consumed), so max_new tokens consume max_new - 1.
std::vector<int64_t> generation_inputs(int64_t pending, const std::vector<int64_t>& prompt,
                                       const std::function<int64_t()>& eos, int64_t pos,
                                       int64_t limit, int64_t max_new, bool resumed);

// "fast" or "torch" for a causal lm-head model with no unmerged adapters; the model must outlive
// the torch engine (the fast one copies the weights). "fast" is an error naming the reason for a
// model fast_support() (infer/fast_model.h) refuses.
// `weights`: the fast engine's weight format (core/quant.h); the torch engine takes f32 only.
std::unique_ptr<Engine> make_engine(const std::string& name, SeqModelImpl& model,
                                    WeightFormat weights = WeightFormat::f32);

// Resolves a requested engine (auto | fast | torch) for this model. auto is fast where
// fast_support() allows it, else torch, with `notice` set to one line saying why; an explicit fast
// on a model the fast decoder refuses is a seqlab::Error naming the reason (and the way out).
struct EngineChoice {
  std::string engine;  // fast | torch
  std::string notice;  // set when auto fell back to torch: one line for the user
  std::string reason;  // fast_support()'s reason when the fast engine was not usable
};
EngineChoice choose_engine(const std::string& requested, SeqModelImpl& model);

// The longest sequence (tokens consumed) the model handles: max_context with learned or
// sinusoidal positions or a KV cache, else -1 (unbounded).
int64_t max_sequence(SeqModelImpl& model);

}  // namespace seqlab::infer
