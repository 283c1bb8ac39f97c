// seqlab archs and seqlab tasks: the listings, read from the registries
// (src/seqlab/mixers/registry.h, src/seqlab/mixers/feature_maps/registry.h,
// src/seqlab/tasks/registry.h).
#include "commands.h"

#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/tasks/registry.h"

#include <fmt/format.h>

namespace seqlab::cli {

namespace {

int list_archs() {
  fmt::print("architectures (--arch):\n");
  for (const auto& e : mixer_registry()) fmt::print("  {:<10} {}\n", e.name, e.description);
  fmt::print("feature maps (--arch linear --feature-map NAME, or --arch NAME):\n");
  for (const auto& e : feature_map_registry()) fmt::print("  {:<10} {}\n", e.name, e.description);
  return 0;
}

int list_tasks() {
  for (const auto& e : task_registry()) fmt::print("  {:<20} {}\n", e.name, e.description);
  return 0;
}

}  // namespace

void add_list_commands(CLI::App& app, Actions& actions) {
  actions.push_back(
      {app.add_subcommand("archs", "list architectures and feature maps"), list_archs});
  actions.push_back({app.add_subcommand("tasks", "list tasks"), list_tasks});
}

}  // namespace seqlab::cli
