// Mixer registry: name -> (one-line description, factory). `seqlab archs` prints it.
#pragma once

#include "seqlab/mixers/mixer.h"

#include <string>
#include <vector>

namespace seqlab {

struct MixerEntry {
  std::string name;
  std::string description;
  std::function<Mixer(const MixerConfig&)> make;
};

// Every architecture, in display order.
const std::vector<MixerEntry>& mixer_registry();

// Builds the mixer cfg.arch names. cfg must have been validated.
Mixer make_mixer(const MixerConfig& cfg);

}  // namespace seqlab
