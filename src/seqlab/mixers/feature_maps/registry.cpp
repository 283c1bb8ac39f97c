#include "seqlab/mixers/feature_maps/registry.h"

#include "seqlab/core/error.h"

namespace seqlab {

namespace {
Registry<FeatureMapEntry>& registry() {
  return Registry<FeatureMapEntry>::instance();
}
}  // namespace

namespace detail {

FeatureMapRegistrar::FeatureMapRegistrar(const std::string& name, FeatureMapSpec spec,
                                         FeatureMapFactory make) {
  auto& e = registry().slot(name);
  SEQLAB_CHECK(!e.make, "feature map '{}' is registered twice", name);
  e.description = std::move(spec.description);
  e.order = spec.order;
  e.aliases = std::move(spec.aliases);
  e.make = std::move(make);
  registry().sort();
}

FeatureMapRegistrar::FeatureMapRegistrar(const std::string& name, FastFeatureMapFactory make_fast) {
  auto& e = registry().slot(name);
  SEQLAB_CHECK(!e.make_fast, "feature map '{}' has two fast forms", name);
  e.make_fast = std::move(make_fast);
  registry().sort();
}

}  // namespace detail

const std::vector<FeatureMapEntry>& feature_map_registry() {
  return registry().entries();
}

const FeatureMapEntry* find_feature_map(const std::string& name) {
  for (const auto& e : registry().entries()) {
    if (!e.make) continue;
    if (e.name == name) return &e;
    for (const auto& a : e.aliases)
      if (a == name) return &e;
  }
  return nullptr;
}

std::string feature_map_names() {
  return registry().names();
}

const char* feature_map_flag_help() {
  static thread_local std::string help;
  std::string names;
  for (const auto& e : registry().entries()) names += (names.empty() ? "" : "|") + e.name;
  help = "linear-attention feature map: " + names;
  return help.c_str();
}

FeatureMap make_feature_map(const MixerConfig& cfg) {
  const auto* e = find_feature_map(cfg.feature_map);
  SEQLAB_CHECK(e, "unknown feature map '{}' (known: {})", cfg.feature_map, feature_map_names());
  return e->make(cfg);
}

}  // namespace seqlab
