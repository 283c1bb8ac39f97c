#include "seqlab/mixers/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/elman.h"

namespace seqlab {

namespace {
template <class Impl>
Mixer make(const MixerConfig& c) {
  return std::make_shared<Impl>(c);
}
}  // namespace

const std::vector<MixerEntry>& mixer_registry() {
  static const std::vector<MixerEntry> r = {
      {"elman", "Elman RNN: h = tanh(W_ih x + W_hh h)", make<ElmanImpl>},
  };
  return r;
}

Mixer make_mixer(const MixerConfig& cfg) {
  for (const auto& e : mixer_registry())
    if (e.name == cfg.arch) return e.make(cfg);
  std::string names;
  for (const auto& e : mixer_registry()) names += (names.empty() ? "" : ", ") + e.name;
  fail("unknown architecture '{}' (known: {})", cfg.arch, names);
}

}  // namespace seqlab
