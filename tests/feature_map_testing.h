// Shared helpers for the feature-map tests (tests/test_<map>.cpp).
#pragma once

#include "seqlab/mixers/feature_maps/feature_map.h"

#include "mixer_testing.h"

namespace seqlab::testing {

// A linear-attention config for feature map `map`, with head width Dh = d_model / n_head and
// feature width d_feature (0 = d_head).
inline MixerConfig map_config(const std::string& map, int64_t d_model = 16, int64_t n_head = 2,
                              int64_t d_feature = 0) {
  auto c = small_config("linear");
  c.feature_map = map;
  c.d_model = d_model;
  c.n_head = n_head;
  c.d_feature = d_feature;
  c.validate();
  return c;
}

}  // namespace seqlab::testing
