#include "seqlab/infer/feature_maps/feature_map.h"

#include "seqlab/core/error.h"

namespace seqlab::infer {

std::unique_ptr<FastFeatureMap> make_fast_feature_map(const MixerConfig& cfg, const Weights& w) {
  const auto* e = find_feature_map(cfg.feature_map);
  SEQLAB_CHECK(e, "fast decoder: unknown feature map '{}' (known: {})", cfg.feature_map,
               feature_map_names());
  SEQLAB_CHECK(e->make_fast, "fast decoder: feature map '{}' has no fast form", e->name);
  return e->make_fast(cfg, w);
}

}  // namespace seqlab::infer
