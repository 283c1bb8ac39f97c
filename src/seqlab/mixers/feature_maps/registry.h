// The feature-map registry: every kernel feature map of linear attention, by name. Config
// validation (--feature-map, and a map's name as --arch), `seqlab archs`, linear attention and the
// fast decoder read it; nothing else lists the maps.
//
// An entry is registered from the map's own files, in two halves keyed by the map class's kName
// (written once, in its header):
//
//   mixers/feature_maps/<map>.cpp  SEQLAB_REGISTER_FEATURE_MAP(T2rImpl, {description, order,
//                                  aliases}): the LibTorch module
//   infer/feature_maps/<map>.cpp   SEQLAB_REGISTER_FAST_FEATURE_MAP(T2rImpl, factory): the fast
//                                  decoder's twin (infer/ sits above mixers/; this layer only
//                                  carries the slot)
//
// tests/test_registry.cpp checks that every map has both halves and that they agree.
#pragma once

#include "seqlab/core/registry.h"
#include "seqlab/mixers/feature_maps/feature_map.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace seqlab {

namespace infer {
class FastFeatureMap;
class Weights;
}  // namespace infer

using FeatureMapFactory = std::function<FeatureMap(const MixerConfig&)>;
using FastFeatureMapFactory = std::function<std::unique_ptr<infer::FastFeatureMap>(
    const MixerConfig&, const infer::Weights&)>;

struct FeatureMapEntry {
  std::string name;                  // --feature-map value (the map class's kName)
  std::string description;           // one line for `seqlab archs`
  int order = 0;                     // position in listings
  std::vector<std::string> aliases;  // other accepted spellings (elu -> elu1)
  FeatureMapFactory make;            // the LibTorch module
  FastFeatureMapFactory make_fast;   // the fast decoder's twin (infer/feature_maps/<map>.cpp)
};

// The first half of an entry, as the map's own file writes it.
struct FeatureMapSpec {
  std::string description;
  int order = 0;
  std::vector<std::string> aliases;
};

// Every feature map, in display order.
const std::vector<FeatureMapEntry>& feature_map_registry();
// The entry named `name` or one of its aliases, or nullptr.
const FeatureMapEntry* find_feature_map(const std::string& name);
// "a, b, c": the canonical names, for messages.
std::string feature_map_names();

// Builds the feature map cfg.feature_map names; an unknown name throws seqlab::Error.
FeatureMap make_feature_map(const MixerConfig& cfg);

namespace detail {
struct FeatureMapRegistrar {
  FeatureMapRegistrar(const std::string& name, FeatureMapSpec spec, FeatureMapFactory make);
  FeatureMapRegistrar(const std::string& name, FastFeatureMapFactory make_fast);
};
}  // namespace detail

// Registers the LibTorch half of Impl's entry (name Impl::kName), from the map's .cpp.
#define SEQLAB_REGISTER_FEATURE_MAP(Impl, ...)                                                     \
  static const ::seqlab::detail::FeatureMapRegistrar SEQLAB_REGISTRY_NAME(feature_map_registrar_)( \
      Impl::kName, ::seqlab::FeatureMapSpec __VA_ARGS__,                                           \
      [](const ::seqlab::MixerConfig& c) -> ::seqlab::FeatureMap {                                 \
        return std::make_shared<Impl>(c);                                                          \
      })

// Registers the fast decoder's half of Impl's entry, from infer/feature_maps/<map>.cpp.
#define SEQLAB_REGISTER_FAST_FEATURE_MAP(Impl, factory)                    \
  static const ::seqlab::detail::FeatureMapRegistrar SEQLAB_REGISTRY_NAME( \
      fast_feature_map_registrar_)(Impl::kName, factory)

}  // namespace seqlab
