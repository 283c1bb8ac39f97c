// The architecture registry: every sequence mixer, by name, with everything the rest of seqlab
// needs to know about it. Config validation, `seqlab archs`, the model, the fast decoder and the
// training-memory estimate all read it; nothing else lists the architectures.
//
// An entry is registered from the mixer's own files, in two halves keyed by the mixer class's
// kArch name (written once, in its header):
//
//   mixers/<name>.cpp        SEQLAB_REGISTER_ARCH(ElmanImpl, {.help = ..., .order = ..., ...});
//                            name, help, LibTorch factory, traits, memory-estimate figures
//   infer/mixers/<name>.cpp  SEQLAB_REGISTER_FAST_ARCH(ElmanImpl, make_fast_elman);
//                            the fast decoder's factory (infer/ sits above mixers/, so this layer
//                            only carries the slot; it never calls it)
//
// tests/test_registry.cpp walks the registry: every entry must have both halves, and the fast form
// must equal the LibTorch step.
//
// Registration runs during static initialisation, single-threaded, before main(); the accessors
// below are read-only afterwards and safe to call from any thread.
#pragma once

#include "seqlab/core/registry.h"
#include "seqlab/mixers/mixer.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace seqlab {

namespace infer {
class FastMixer;
class Weights;
}  // namespace infer

// What an architecture can do, where other layers must ask.
struct ArchTraits {
  // Attends over positions (softmax and linear attention): it may be bidirectional
  // (--causal false), wrapped in a mixture of attentive experts (--mae), solved as a DEQ block
  // (--deq) and used as an encoder.
  bool attention = false;
  // Takes --feature-map (linear attention); its display label names the map, and it is a
  // conversion target.
  bool feature_map = false;
  // Its state grows with the context (a KV cache of max_len positions) instead of staying fixed.
  bool kv_cache = false;
  // Takes --window, --decay and --gate (the hybrid of sliding-window softmax and gated linear
  // attention).
  bool windowed = false;
  // Projects q, k, v, o from the residual stream: takes --n-kv-head, --rope and --qkv-bias /
  // --o-bias, and a converted teacher's projections load into it (every attention mixer, and the
  // causal-only hybrid).
  bool projections = false;
  // Takes --short-conv: a causal depthwise convolution over its q, k, v projections (linear
  // attention).
  bool short_conv = false;
};

// The figures train/memory_estimate.cpp needs.
struct ArchMemory {
  double matrices = 4;  // D x D parameter matrices in one mixer (q, k, v, o for attention)
  // Floats per batch row, per head and per position of one block's attention-score temporaries in
  // a training step, beyond the block's common activations (softmax: 3 T for the scores, their
  // softmax and its gradient). Empty for mixers without any.
  std::function<double(const MixerConfig&, int64_t length)> score_floats;
};

using MixerFactory = std::function<Mixer(const MixerConfig&)>;
using FastMixerFactory =
    std::function<std::unique_ptr<infer::FastMixer>(const MixerConfig&, const infer::Weights&)>;

struct ArchEntry {
  std::string name;         // --arch value (the mixer class's kArch)
  std::string description;  // one line for `seqlab archs`
  int order = 0;            // position in listings
  MixerFactory make;        // the LibTorch module
  ArchTraits traits;
  ArchMemory memory;
  FastMixerFactory make_fast;  // the fast decoder's twin (infer/mixers/<name>.cpp)
};

// The first half of an entry, as the mixer's own file writes it.
struct ArchSpec {
  std::string description;
  int order = 0;
  ArchTraits traits;
  ArchMemory memory;
};

// Every architecture, in display order.
const std::vector<ArchEntry>& mixer_registry();
// The entry named `name`, or nullptr.
const ArchEntry* find_arch(const std::string& name);
// The entry named `name`; an unknown name throws seqlab::Error listing the known ones.
const ArchEntry& arch_entry(const std::string& name);
// "softmax, linear, ...": every architecture's name, for messages.
std::string arch_names();
// "softmax and linear attention" (conj = "and") or "softmax or linear attention": the
// architectures with traits.attention, for messages.
std::string attention_arch_names(const char* conj);
// The same for traits.projections ("softmax, linear or hybrid").
std::string projection_arch_names(const char* conj);
// "softmax", "gru", or for mixers that take a feature map "linear (t2r)", then " + short conv K"
// with a short convolution.
std::string arch_label(const MixerConfig& cfg);
// The short name suites and reports use: the feature map's name ("t2r") for mixers that take one,
// else the architecture's ("gru"); "+convK" follows with a short convolution ("elu1+conv4").
std::string arch_short_name(const MixerConfig& cfg);
// cfg's feature map when its mixer takes one, else "".
std::string feature_map_of(const MixerConfig& cfg);

// Builds the mixer cfg.arch names (wrapped in a mixture of attentive experts with --mae). cfg
// must have been validated.
Mixer make_mixer(const MixerConfig& cfg);

namespace detail {
struct ArchRegistrar {
  ArchRegistrar(const std::string& name, ArchSpec spec, MixerFactory make);
  ArchRegistrar(const std::string& name, FastMixerFactory make_fast);
};
}  // namespace detail

// Registers the LibTorch half of Impl's entry (name Impl::kArch), from the mixer's .cpp.
#define SEQLAB_REGISTER_ARCH(Impl, ...)                                                           \
  static const ::seqlab::detail::ArchRegistrar SEQLAB_REGISTRY_CONCAT(arch_registrar_, __LINE__)( \
      Impl::kArch, ::seqlab::ArchSpec __VA_ARGS__,                                                \
      [](const ::seqlab::MixerConfig& c) -> ::seqlab::Mixer { return std::make_shared<Impl>(c); })

// Registers the fast decoder's half of Impl's entry, from infer/mixers/<name>.cpp.
#define SEQLAB_REGISTER_FAST_ARCH(Impl, factory)                       \
  static const ::seqlab::detail::ArchRegistrar SEQLAB_REGISTRY_CONCAT( \
      fast_arch_registrar_, __LINE__)(Impl::kArch, factory)

}  // namespace seqlab
