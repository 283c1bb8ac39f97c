// The mixer contract: the heart of the toolkit.
//
// Dimension legend, used in shape comments throughout mixers/:
//   B = batch, T = time, D = d_model, H = heads, Dh = D / H (head width),
//   F = feature-map width per head, N = SSM state size, E = inner width (Mamba).
//
// Every sequence mixer has a parallel form and a recurrent form, and they must agree:
//
//   forward(x)        x [B,T,D] -> [B,T,D]; causal unless built with causal = false
//   init_state(B)     the recurrent state before the first token
//   step(x_t, s)      x_t [B,D] -> [B,D]; advances s in place
//
// Stepping step() over t = 0..T-1 equals forward() within 1e-5 in fp32; every mixer has a test
// that says so (tests/test_<mixer>.cpp, via tests/mixer_testing.h).
//
// Projections are named q, k, v, o (attention) or w_ih, w_hh (RNNs): conversion maps weights by
// name, so parameter names are a contract.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/mixers/mixer_config.h"

#include <fmt/ranges.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

namespace seqlab {

// A mixer's recurrent state. Each mixer defines its own State type (in its own header), with the
// shapes in comments, deriving from MixerStateBase<ThatType>.
struct MixerState {
  virtual ~MixerState() = default;
  // Visits every tensor of the state, by a stable name: snapshots read through it, restores and
  // clones write through it.
  virtual void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) = 0;
  // A deep copy, for branching generation.
  virtual std::unique_ptr<MixerState> clone() const = 0;
};

template <class Derived>
struct MixerStateBase : MixerState {
  std::unique_ptr<MixerState> clone() const override {
    auto c = std::make_unique<Derived>(static_cast<const Derived&>(*this));
    c->for_each([](const std::string&, torch::Tensor& t) {
      if (t.defined()) t = t.clone();
    });
    return c;
  }
};

// Implemented by the attention mixers (traits.attention): forward() and step() before the output
// projection o, the heads' outputs side by side (head h in columns h*Dh..(h+1)*Dh). The mixture of
// attentive experts (mae.h) reweights the heads there.
class HeadsMixer {
 public:
  virtual ~HeadsMixer() = default;
  // x [B,T,D] -> [B,T,D]
  virtual torch::Tensor forward_heads(const torch::Tensor& x) = 0;
  // x_t [B,D] -> [B,D]; advances s
  virtual torch::Tensor step_heads(const torch::Tensor& x_t, MixerState& s) = 0;
};

class MixerImpl : public torch::nn::Module {
 public:
  explicit MixerImpl(MixerConfig cfg) : cfg_(std::move(cfg)) {}

  // x: [B,T,D] -> [B,T,D]
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // The state before the first token, for a batch of B sequences, on this mixer's device.
  virtual std::unique_ptr<MixerState> init_state(int64_t batch) const = 0;
  // x_t: [B,D] -> [B,D]; advances s in place. s must come from this mixer's init_state.
  virtual torch::Tensor step(const torch::Tensor& x_t, MixerState& s) = 0;
  // Whether the model adds position embeddings before blocks of this mixer (attention: yes;
  // recurrent mixers know the order already).
  virtual bool needs_positions() const { return false; }

  const MixerConfig& config() const { return cfg_; }

 protected:
  // The checks every step() of a mixer with an optional bidirectional mode starts with: the mixer
  // is causal (a bidirectional one has no recurrent form) and x_t is [B,D].
  void check_step_input(const torch::Tensor& x_t, const char* mixer) const {
    SEQLAB_CHECK(cfg_.causal,
                 "{}: step() needs a causal mixer; a bidirectional one has no recurrent form",
                 mixer);
    SEQLAB_CHECK(x_t.dim() == 2 && x_t.size(1) == cfg_.d_model, "{}: expected x_t [B,{}], got [{}]",
                 mixer, cfg_.d_model, fmt::join(x_t.sizes().vec(), ","));
  }

  // Options (device, fp32) for state tensors: the device of the parameters.
  torch::TensorOptions state_options() const {
    auto ps = parameters();
    auto dev = ps.empty() ? torch::Device(torch::kCPU) : ps.front().device();
    return torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  }

  MixerConfig cfg_;
};

using Mixer = std::shared_ptr<MixerImpl>;

// Loops over time, unbind not select: the per-token references of the fused scans
// (selective_scan.h, linear_scan.h, lstm_scan.h, gru_scan.h, elman_scan.h) and the mixers that
// loop in tensor ops take their steps with unbind(1), not select(1, t): each select's backward
// writes its step's gradient into a zero tensor the size of the whole [B,T,G] input, so the
// backward pass of a T-step loop costs O(T^2) memory traffic; unbind's backward stacks the T
// gradients once. The gradients are the same (a sum of zeros and one value is exact).

// Casts a MixerState to the concrete type a mixer expects, with a clear error on a mismatch.
template <class S>
S& state_as(MixerState& s, const char* mixer) {
  auto* p = dynamic_cast<S*>(&s);
  if (!p) fail("{}: step() was given the state of another mixer", mixer);
  return *p;
}

}  // namespace seqlab
