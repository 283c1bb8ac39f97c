#include "seqlab/mixers/feature_maps/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/feature_maps/elu1.h"
#include "seqlab/mixers/feature_maps/hedgehog.h"
#include "seqlab/mixers/feature_maps/performer.h"
#include "seqlab/mixers/feature_maps/relu.h"
#include "seqlab/mixers/feature_maps/rfa.h"
#include "seqlab/mixers/feature_maps/t2r.h"

namespace seqlab {

namespace {
template <class Impl>
FeatureMap make(const MixerConfig& c) {
  return std::make_shared<Impl>(c);
}
}  // namespace

const std::vector<FeatureMapEntry>& feature_map_registry() {
  static const std::vector<FeatureMapEntry> r = {
      {"elu1", "elu(x) + 1 (Katharopoulos et al. 2020)", make<Elu1Impl>},
      {"relu", "relu(x)", make<ReluImpl>},
      {"rfa", "random Fourier features of unit q, k: Gaussian kernel (Peng et al. 2021)",
       make<RfaImpl>},
      {"performer", "FAVOR+ positive orthogonal random features of exp(q.k) (Choromanski 2021)",
       make<PerformerImpl>},
      {"t2r", "learned relu(Wx + b), shared by q and k (Kasai et al. 2021)", make<T2rImpl>},
      {"hedgehog", "learned [softmax(Wx + b), softmax(-Wx - b)] (Zhang et al. 2024)",
       make<HedgehogImpl>},
  };
  return r;
}

FeatureMap make_feature_map(const MixerConfig& cfg) {
  for (const auto& e : feature_map_registry())
    if (e.name == cfg.feature_map) return e.make(cfg);
  std::string names;
  for (const auto& e : feature_map_registry()) names += (names.empty() ? "" : ", ") + e.name;
  fail("unknown feature map '{}' (known: {})", cfg.feature_map, names);
}

}  // namespace seqlab
