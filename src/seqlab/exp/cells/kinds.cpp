#include "seqlab/exp/cells/kinds.h"

#include "seqlab/core/error.h"

namespace seqlab {

namespace detail {

CellKindRegistrar::CellKindRegistrar(
    const std::string& name, int order, std::string help,
    std::function<nlohmann::json(const nlohmann::json&, const std::string&)> run,
    std::function<void(const nlohmann::json&)> check, bool measures_memory) {
  auto& r = Registry<CellKind>::instance();
  auto& e = r.slot(name);
  e.order = order;
  e.help = std::move(help);
  e.run = std::move(run);
  e.check = std::move(check);
  e.measures_memory = measures_memory;
  r.sort();
}

}  // namespace detail

const std::vector<CellKind>& cell_kinds() {
  return Registry<CellKind>::instance().entries();
}

const CellKind& cell_kind_of(const nlohmann::json& cell) {
  const auto& r = Registry<CellKind>::instance();
  const std::string kind = cell.value("kind", std::string(kPlainCellKind));
  const auto* e = r.find(kind);
  SEQLAB_CHECK(e, "cell {}: unknown kind '{}' ({})", cell.value("id", nlohmann::json()).dump(),
               kind, r.names());
  return *e;
}

}  // namespace seqlab
