#include "seqlab/mixers/mixer_config.h"

#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"

namespace seqlab {

void MixerConfig::validate() {
  // A feature map's name (or alias) as the arch means linear attention with that map.
  if (const auto* map = find_feature_map(arch); map && !find_arch(arch)) {
    for (const auto& e : mixer_registry())
      if (e.traits.feature_map) {
        feature_map = map->name;
        arch = e.name;
        break;
      }
  }
  const auto* entry = find_arch(arch);
  SEQLAB_CHECK(entry, "unknown architecture '{}' (known: {}, or a feature map: {})", arch,
               arch_names(), feature_map_names());
  const auto* map = find_feature_map(feature_map);
  SEQLAB_CHECK(map, "unknown feature map '{}' (known: {})", feature_map, feature_map_names());
  feature_map = map->name;
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
  SEQLAB_CHECK(causal || entry->traits.attention,
               "--causal false (bidirectional) is only available for {}, not '{}'",
               attention_arch_names("and"), arch);
  SEQLAB_CHECK(!mae || entry->traits.attention,
               "--mae (mixture of attentive experts) needs {}, not '{}'",
               attention_arch_names("or"), arch);
  SEQLAB_CHECK(!mae || n_head >= 2,
               "--mae needs at least 2 heads (each expert drops one of them), got n_head = {}",
               n_head);
  SEQLAB_CHECK(n_kv_head >= 0 && kv_heads() <= n_head && n_head % kv_heads() == 0,
               "n_kv_head ({}) must divide n_head ({}) (0 = n_head)", n_kv_head, n_head);
  SEQLAB_CHECK(kv_heads() == n_head || entry->traits.projections,
               "--n-kv-head (grouped-query attention) needs {}, not '{}'",
               projection_arch_names("or"), arch);
  SEQLAB_CHECK(!rope || entry->traits.projections, "--rope needs {}, not '{}'",
               projection_arch_names("or"), arch);
  SEQLAB_CHECK((qkv_bias && o_bias) || entry->traits.projections,
               "--qkv-bias/--o-bias false need {}, not '{}'", projection_arch_names("or"), arch);
  if (rope) {
    SEQLAB_CHECK(rope_theta > 0, "rope_theta must be positive, got {}", rope_theta);
    SEQLAB_CHECK(rope_fraction > 0 && rope_fraction <= 1, "rope_fraction must be in (0, 1], got {}",
                 rope_fraction);
    SEQLAB_CHECK(rope_dims() >= 2,
                 "rope_fraction {} of d_head {} rotates {} dims; RoPE needs at least 2",
                 rope_fraction, d_head(), rope_dims());
  }
  SEQLAB_CHECK(window >= 0, "--window must be >= 0 (0 = no softmax window), got {}", window);
  SEQLAB_CHECK(window <= max_len, "--window {} is larger than the context --max-context {}", window,
               max_len);
  SEQLAB_CHECK(decay > 0 && decay <= 1, "--decay must be in (0, 1], got {}", decay);
  SEQLAB_CHECK(gate == "none" || gate == "key", "--gate must be none or key, got '{}'", gate);
  SEQLAB_CHECK(entry->traits.windowed || (window == 0 && decay == 1 && gate == "none"),
               "--window, --decay and --gate belong to the hybrid attention, not '{}'", arch);
  SEQLAB_CHECK(short_conv >= 0, "--short-conv must be >= 0 (0 = none), got {}", short_conv);
  SEQLAB_CHECK(short_conv == 0 || entry->traits.short_conv,
               "--short-conv belongs to linear attention (--arch linear or a feature map), not "
               "'{}'",
               arch);
  SEQLAB_CHECK(mae_gate == "prefix" || mae_gate == "token",
               "--mae-gate must be prefix or token, got '{}'", mae_gate);
  SEQLAB_CHECK(mae_gate_hidden >= 0, "--mae-gate-hidden must be >= 0 (0 = d_model), got {}",
               mae_gate_hidden);
}

int64_t MixerConfig::rope_dims() const {
  if (!rope) return 0;
  // NeoX: rotary_ndims = int(head_size * rotary_pct); an odd count loses its last dim, as the
  // rotate-half split needs pairs.
  const auto r = static_cast<int64_t>(static_cast<double>(d_head()) * rope_fraction);
  return r - r % 2;
}

}  // namespace seqlab
