// The dispatch table of cell kinds: each kind registers itself from its own file
// (exp/cells/<kind>.cpp) with SEQLAB_REGISTER_CELL_KIND; exp/cell.h's run_cell picks the entry by
// the spec's "kind" ("plain" for the grid cells of the synthetic suites, which have none).
//
// A kind's run reads the spec into its config struct (exp/cells/fields.h, strict), runs it in
// `run_dir` and returns {"id", ["train_seconds"], "rows": [its typed rows as JSON]}; check reads
// the spec without running anything, so that a typo in a grid fails at once.
#pragma once

#include "seqlab/core/registry.h"
#include "seqlab/exp/cells/fields.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace seqlab {

// The kind of a spec without "kind".
inline constexpr const char* kPlainCellKind = "plain";

struct CellKind {
  std::string name;
  int order = 0;
  std::string help;  // one line: what a cell of this kind does
  std::function<nlohmann::json(const nlohmann::json& cell, const std::string& run_dir)> run;
  std::function<void(const nlohmann::json& cell)> check;
  // Its rows report training memory (resident-set peaks), so its worker runs on glibc's malloc
  // defaults (core/malloc_tune.h keeps freed memory, which the peaks would count).
  bool measures_memory = false;
};

// Every kind, in registration order (then by name).
const std::vector<CellKind>& cell_kinds();

// The entry for `cell`'s "kind" (plain without one); an unknown kind is an error naming the cell
// and listing the known ones.
const CellKind& cell_kind_of(const nlohmann::json& cell);

// A kind's check that reads the spec as its config, strictly (exp/cells/fields.h).
template <class Config>
void check_spec(const nlohmann::json& cell) {
  read_spec<Config>(cell, cell_source(cell));
}

namespace detail {
struct CellKindRegistrar {
  CellKindRegistrar(const std::string& name, int order, std::string help,
                    std::function<nlohmann::json(const nlohmann::json&, const std::string&)> run,
                    std::function<void(const nlohmann::json&)> check, bool measures_memory = false);
};
}  // namespace detail

}  // namespace seqlab

// Registers a cell kind from its own file:
//   SEQLAB_REGISTER_CELL_KIND("lm_bench", 30, "generation speed and state memory", run, check);
// with a last argument `true` for a kind that measures memory (CellKind::measures_memory).
#define SEQLAB_REGISTER_CELL_KIND(name, order, help, run, ...)                                 \
  static const ::seqlab::detail::CellKindRegistrar SEQLAB_REGISTRY_NAME(cell_kind_registrar_)( \
      name, order, help, run, __VA_ARGS__)
