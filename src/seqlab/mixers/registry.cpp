#include "seqlab/mixers/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/core/registry.h"
#include "seqlab/mixers/mae.h"

namespace seqlab {

namespace {
Registry<ArchEntry>& registry() {
  return Registry<ArchEntry>::instance();
}
}  // namespace

namespace detail {

ArchRegistrar::ArchRegistrar(const std::string& name, ArchSpec spec, MixerFactory make) {
  auto& e = registry().slot(name);
  SEQLAB_CHECK(!e.make, "architecture '{}' is registered twice", name);
  e.description = std::move(spec.description);
  e.order = spec.order;
  e.traits = spec.traits;
  e.memory = std::move(spec.memory);
  e.make = std::move(make);
  registry().sort();
}

ArchRegistrar::ArchRegistrar(const std::string& name, FastMixerFactory make_fast) {
  auto& e = registry().slot(name);
  SEQLAB_CHECK(!e.make_fast, "architecture '{}' has two fast forms", name);
  e.make_fast = std::move(make_fast);
  registry().sort();
}

}  // namespace detail

const std::vector<ArchEntry>& mixer_registry() {
  return registry().entries();
}

const ArchEntry* find_arch(const std::string& name) {
  const auto* e = registry().find(name);
  return e && e->make ? e : nullptr;
}

const ArchEntry& arch_entry(const std::string& name) {
  const auto* e = find_arch(name);
  SEQLAB_CHECK(e, "unknown architecture '{}' (known: {})", name, registry().names());
  return *e;
}

std::string arch_names() {
  return registry().names();
}

namespace {
std::string names_with(bool ArchTraits::*trait, const char* conj, const char* tail) {
  std::vector<std::string> names;
  for (const auto& e : registry().entries())
    if (e.traits.*trait) names.push_back(e.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? fmt::format(" {} ", conj) : ", ") + names[i];
  return out + tail;
}
}  // namespace

std::string attention_arch_names(const char* conj) {
  return names_with(&ArchTraits::attention, conj, " attention");
}

std::string projection_arch_names(const char* conj) {
  return names_with(&ArchTraits::projections, conj, " attention");
}

const char* arch_flag_help() {
  static thread_local std::string help;
  std::string names;
  for (const auto& e : registry().entries()) names += (names.empty() ? "" : "|") + e.name;
  help =
      "sequence mixer: " + names + ", or a feature-map name (t2r = linear with --feature-map t2r)";
  return help.c_str();
}

std::string arch_label(const MixerConfig& cfg) {
  const auto* e = find_arch(cfg.arch);
  const auto name = e && e->traits.feature_map ? cfg.arch + " (" + cfg.feature_map + ")" : cfg.arch;
  return cfg.short_conv > 0 ? fmt::format("{} + short conv {}", name, cfg.short_conv) : name;
}

std::string arch_short_name(const MixerConfig& cfg) {
  const auto* e = find_arch(cfg.arch);
  const auto name = e && e->traits.feature_map ? cfg.feature_map : cfg.arch;
  return cfg.short_conv > 0 ? fmt::format("{}+conv{}", name, cfg.short_conv) : name;
}

std::string feature_map_of(const MixerConfig& cfg) {
  const auto* e = find_arch(cfg.arch);
  return e && e->traits.feature_map ? cfg.feature_map : "";
}

Mixer make_mixer(const MixerConfig& cfg) {
  // --mae wraps the attention mixer in a mixture of attentive experts (mae.h).
  if (cfg.mae) return std::make_shared<MaeImpl>(cfg);
  return arch_entry(cfg.arch).make(cfg);
}

}  // namespace seqlab
