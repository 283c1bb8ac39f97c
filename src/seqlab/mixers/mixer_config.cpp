#include "seqlab/mixers/mixer_config.h"

#include <algorithm>
#include <vector>

namespace seqlab {

namespace {
const std::vector<std::string> kArchs = {"softmax", "linear", "elman", "gru",
                                         "lstm",    "qrnn",   "s4d",   "mamba"};
const std::vector<std::string> kFeatureMaps = {"elu1",      "relu", "rfa",
                                               "performer", "t2r",  "hedgehog"};
// Accepted spellings of feature maps beyond their canonical names.
const std::vector<std::pair<std::string, std::string>> kFeatureMapAliases = {{"elu", "elu1"}};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}
std::string canonical_feature_map(const std::string& name) {
  for (const auto& [alias, canon] : kFeatureMapAliases)
    if (name == alias) return canon;
  return name;
}
}  // namespace

void MixerConfig::validate() {
  if (contains(kFeatureMaps, canonical_feature_map(arch))) {
    feature_map = canonical_feature_map(arch);
    arch = "linear";
  }
  feature_map = canonical_feature_map(feature_map);
  SEQLAB_CHECK(contains(kArchs, arch),
               "unknown architecture '{}' (known: {}, or a feature map: {})", arch, join(kArchs),
               join(kFeatureMaps));
  SEQLAB_CHECK(contains(kFeatureMaps, feature_map), "unknown feature map '{}' (known: {})",
               feature_map, join(kFeatureMaps));
  SEQLAB_CHECK(d_model > 0, "d_model must be positive, got {}", d_model);
  SEQLAB_CHECK(n_head > 0, "n_head must be positive, got {}", n_head);
  SEQLAB_CHECK(d_model % n_head == 0, "d_model ({}) must be divisible by n_head ({})", d_model,
               n_head);
  SEQLAB_CHECK(d_state > 0, "d_state must be positive, got {}", d_state);
  SEQLAB_CHECK(d_feature >= 0, "d_feature must be >= 0 (0 = d_head), got {}", d_feature);
  SEQLAB_CHECK(chunk_size > 0, "chunk_size must be positive, got {}", chunk_size);
  SEQLAB_CHECK(qrnn_window == 1 || qrnn_window == 2, "qrnn_window must be 1 or 2, got {}",
               qrnn_window);
  SEQLAB_CHECK(qrnn_pooling == "f" || qrnn_pooling == "fo",
               "qrnn_pooling must be f or fo, got '{}'", qrnn_pooling);
  SEQLAB_CHECK(expand > 0, "expand must be positive, got {}", expand);
  SEQLAB_CHECK(d_conv > 0, "d_conv must be positive, got {}", d_conv);
  SEQLAB_CHECK(max_len > 0, "max_len must be positive, got {}", max_len);
  SEQLAB_CHECK(causal || arch == "softmax" || arch == "linear",
               "--causal false (bidirectional) is only available for softmax and linear attention, "
               "not '{}'",
               arch);
  SEQLAB_CHECK(!mae || arch == "softmax" || arch == "linear",
               "--mae (mixture of attentive experts) needs softmax or linear attention, not '{}'",
               arch);
  SEQLAB_CHECK(!mae || n_head >= 2,
               "--mae needs at least 2 heads (each expert drops one of them), got n_head = {}",
               n_head);
  SEQLAB_CHECK(mae_gate == "prefix" || mae_gate == "token",
               "--mae-gate must be prefix or token, got '{}'", mae_gate);
  SEQLAB_CHECK(mae_gate_hidden >= 0, "--mae-gate-hidden must be >= 0 (0 = d_model), got {}",
               mae_gate_hidden);
}

}  // namespace seqlab
