#include "seqlab/exp/cell.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/plain.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace seqlab {

nlohmann::json run_cell(const nlohmann::json& cell, const std::string& run_dir) {
  return cell_kind_of(cell).run(cell, run_dir);
}

int64_t add_blind_accuracy(const std::vector<nlohmann::json>& cells,
                           std::vector<nlohmann::json>& rows) {
  std::map<std::string, const nlohmann::json*> by_id;
  for (const auto& c : cells)
    if (!c.contains("kind")) by_id[c.at("id").get<std::string>()] = &c;
  // (task config with the row's test task, length, eval size, batch, seed) -> blind accuracy
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t, uint64_t>;
  std::map<Key, std::optional<double>> done;  // nullopt: the task has no such baseline
  std::set<std::string> skipped;
  int64_t set = 0;
  for (auto& row : rows) {
    if (row.contains("blind_accuracy") || !row.contains("cell") || !row.contains("test_length"))
      continue;
    const auto id = row.at("cell").get<std::string>();
    auto it = by_id.find(id);
    if (it == by_id.end() || skipped.count(id)) continue;
    try {
      const auto c = read_spec<PlainCellConfig>(*it->second, id);
      const auto r = PlainRow::from_json(row);
      auto tc = c.task;
      if (row.contains("task")) tc.task = r.task;
      const auto& trc = c.train;
      // The same number of sequences the model was scored on at this length (eval_sizes).
      const int64_t L = r.test_length;
      const auto at = std::find(c.test_lengths.begin(), c.test_lengths.end(), L);
      // A validation row's stream is another seed's, and has valid_size sequences.
      const int64_t n = r.is_valid() ? c.valid_size
                        : at == c.test_lengths.end()
                            ? c.eval_size
                            : c.eval_size_at(static_cast<size_t>(at - c.test_lengths.begin()));
      const uint64_t seed = r.is_valid() ? plain_valid_seed(trc.seed) : trc.seed;
      Key k{tc.to_json().dump(), L, n, trc.batch, seed};
      auto hit = done.find(k);
      if (hit == done.end()) {
        auto task = make_task(tc);
        std::optional<double> v;
        if (task->has_blind_baseline()) v = evaluate_blind(*task, L, n, trc.batch, seed).accuracy;
        hit = done.emplace(k, v).first;
      }
      if (!hit->second) continue;
      row["blind_accuracy"] = *hit->second;
      set += 1;
    } catch (const Error& e) {
      log_warn("cell {}: no input-blind baseline: {}", id, e.what());
      skipped.insert(id);
    }
  }
  return set;
}

}  // namespace seqlab
