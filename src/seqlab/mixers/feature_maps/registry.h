// Feature-map registry: name -> (one-line description, factory). Adding a feature map is one
// file pair in this folder plus one line in registry.cpp. `seqlab archs` can print it.
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

#include <functional>
#include <string>
#include <vector>

namespace seqlab {

struct FeatureMapEntry {
  std::string name;
  std::string description;
  std::function<FeatureMap(const MixerConfig&)> make;
};

// Every feature map, in display order.
const std::vector<FeatureMapEntry>& feature_map_registry();

// Builds the feature map cfg.feature_map names; an unknown name throws seqlab::Error.
FeatureMap make_feature_map(const MixerConfig& cfg);

}  // namespace seqlab
