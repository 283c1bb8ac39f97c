// The fast decoder's feature maps: phi of one head's query or key, over plain fp32 buffers, no
// LibTorch op and no allocation per call. Each map's file (infer/feature_maps/<map>.cpp) is the
// twin of mixers/feature_maps/<map>.{h,cpp}, reads the same parameters by the same names
// ("feature_map.w", ...) and registers itself beside it in the feature-map registry
// (mixers/feature_maps/registry.h). The fast linear attention (infer/mixers/linear.cpp) calls it
// per head and token; tests/test_registry.cpp checks each map against its LibTorch twin.
#pragma once

#include "seqlab/infer/fast_mixer.h"
#include "seqlab/mixers/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/registry.h"

#include <memory>

namespace seqlab::infer {

class FastFeatureMap {
 public:
  virtual ~FastFeatureMap() = default;
  // F': the width of phi(x) per head.
  virtual int64_t out_dim() const = 0;
  // Whether phi = exp(log-features), which linear attention keeps in range with offsets
  // (mixers/linear_attention.h): the map then subtracts its largest log-feature before exp and,
  // for keys, returns it in *max_log.
  virtual bool exponential() const { return false; }
  // Head h's query (is_query) or key x [Dh] -> out [F']. tmp: Dh floats of scratch. max_log: null,
  // or where an exponential map writes the offset it removed.
  virtual void apply(const float* x, int64_t h, bool is_query, float* out, float* tmp,
                     float* max_log) const = 0;
};

// Builds the fast twin of cfg.feature_map from the linear attention's weights.
std::unique_ptr<FastFeatureMap> make_fast_feature_map(const MixerConfig& cfg, const Weights& w);

}  // namespace seqlab::infer
