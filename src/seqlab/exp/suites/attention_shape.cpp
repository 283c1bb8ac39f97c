// Suite `attention_shape`: Hedgehog's spikiness and monotonicity (Zhang et al. 2024, §3) for
// every feature map, measured on the shipped teacher (models/teacher-en), issue 36 §3.
//
// Cells (exp/cells/attention_shape.h): the teacher against itself (the check: rho = 1), the
// teacher converted to each registered feature map with the maps as conversion initialises them
// (untrained), and, where the conversion grid's models are on disk (runs/conversion-full, read
// only), its trained maps: Hedgehog after attention transfer alone, and every map after
// finetuning. Only directories that exist when the grid is built become cells, so the suite runs
// without that grid (untrained maps only). --quick: untrained maps on 2 windows of 128 tokens.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/attention_shape.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"
#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

namespace seqlab {

namespace {

constexpr const char* kTeacher = "models/teacher-en";
constexpr const char* kGridRuns = "runs/conversion-full/runs";

std::string attention_shape_report(const std::vector<nlohmann::json>& rows,
                                   const std::string& plot_dir);

}  // namespace

SuiteSpec attention_shape_suite(bool quick) {
  SuiteSpec s;
  s.name = "attention_shape";
  s.description =
      "Hedgehog's spikiness (attention-row entropy) and monotonicity (Spearman rho with the "
      "softmax weights) of every feature map, untrained and trained, on models/teacher-en";
  s.claims =
      "- Zhang et al. (2024), Hedgehog (§3, Figs. 2-3): softmax attention is *spiky* (low-entropy "
      "rows) and *monotonic* (weights rise with the query-key score); earlier feature maps "
      "(ELU+1, ReLU, Performer, T2R, ...) give diffuse, higher-entropy rows that do not rank keys "
      "as softmax does, and this gap tracks their lower quality. Hedgehog's trained MLP feature "
      "map, fit to the softmax weights (attention transfer), recovers both.";
  const int64_t windows = quick ? 2 : 8, length = quick ? 128 : 256;
  auto cell = [&](const std::string& id, const std::string& label, const std::string& source) {
    return nlohmann::json{
        {"id", id},         {"kind", "attention_shape"}, {"label", label},  {"teacher", kTeacher},
        {"source", source}, {"windows", windows},        {"length", length}};
  };
  auto c = cell("softmax", "softmax (teacher vs itself)", "reference");
  c["to"] = "softmax";
  s.cells.push_back(c);
  for (const auto& fm : feature_map_registry()) {
    auto u = cell("untrained_" + fm.name, fm.name + ", untrained", "untrained");
    u["to"] = fm.name;
    s.cells.push_back(u);
  }
  if (!quick) {
    // The conversion grid's models (exp/suites/conversion_full.cpp): cell id, then the folder.
    const std::vector<std::tuple<std::string, std::string, std::string>> trained = {
        {"hedgehog_at", "converted", "transfer"},
        {"hedgehog_at", "model", "transfer+finetuned"},
        {"hedgehog", "model", "finetuned"},
        {"t2r", "model", "finetuned"},
        {"elu", "model", "finetuned"},
        {"rfa", "model", "finetuned"}};
    for (const auto& [id, folder, source] : trained)
      for (int seed = 0; seed < 3; ++seed) {
        const auto dir = fmt::format("{}/{}_s{}/{}", kGridRuns, id, seed, folder);
        if (!std::filesystem::exists(std::filesystem::path(dir) / kConfigFile)) continue;
        auto t = cell(fmt::format("{}_{}_s{}", id, folder, seed),
                      fmt::format("{} ({}), seed {}", id, source, seed), source);
        t["from"] = dir;
        s.cells.push_back(t);
      }
  }
  s.custom_report = attention_shape_report;
  return s;
}

namespace {

// The heads of every model of one (map, source), pooled over seeds.
struct Group {
  std::string map, source;
  std::set<std::string> cells;
  std::vector<double> entropy, entropy_softmax, spearman, negative;
  std::map<int64_t, std::vector<double>> entropy_by_layer, spearman_by_layer;
};

std::string claim_of(const Group& g) {
  if (g.source == "reference") return "the check: the same entropy, ρ = 1";
  if (g.map == "hedgehog" && g.source != "untrained")
    return "trained Hedgehog: spiky and monotonic like softmax (low entropy, high ρ)";
  if (g.map == "hedgehog") return "untrained: not claimed (the paper's maps are trained)";
  return "earlier maps: more diffuse than softmax (higher entropy), not monotonic (low ρ)";
}

std::string summary_table(const std::vector<Group>& gs) {
  std::string md =
      md_header({"map", "maps trained by", "models", "heads", "softmax entropy",
                 "entropy (mean ± sd over heads)", "Δ vs softmax",
                 "Spearman ρ (mean ± sd over heads)", "negative weight", "Hedgehog's claim"},
                "llrrrrrrrl");
  for (const auto& g : gs) {
    const auto e = sample_stats(g.entropy), es = sample_stats(g.entropy_softmax),
               r = sample_stats(g.spearman), n = sample_stats(g.negative);
    md += md_row({g.map, g.source, std::to_string(g.cells.size()), std::to_string(e.n),
                  fmt::format("{:.3f}", es.mean), fmt_mean_sd(e.mean, e.sd, 3),
                  fmt::format("{:+.3f}", e.mean - es.mean),
                  r.n ? fmt_mean_sd(r.mean, r.sd, 3) : std::string("—"),
                  fmt::format("{:.1f}%", 100 * n.mean), claim_of(g)});
  }
  return md;
}

std::string layer_table(const std::vector<Group>& gs) {
  std::set<int64_t> layers;
  for (const auto& g : gs)
    for (const auto& [l, v] : g.entropy_by_layer) layers.insert(l);
  std::vector<std::string> head = {"map", "maps trained by"};
  for (auto l : layers) head.push_back(fmt::format("layer {} entropy / ρ", l));
  std::string md = md_header(head, "ll" + std::string(layers.size(), 'r'));
  for (const auto& g : gs) {
    std::vector<std::string> row = {g.map, g.source};
    for (auto l : layers) {
      const auto e = sample_stats(g.entropy_by_layer.count(l) ? g.entropy_by_layer.at(l)
                                                              : std::vector<double>{});
      const auto r = sample_stats(g.spearman_by_layer.count(l) ? g.spearman_by_layer.at(l)
                                                               : std::vector<double>{});
      row.push_back(e.n ? fmt::format("{:.2f} / {}", e.mean,
                                      r.n ? fmt::format("{:.2f}", r.mean) : std::string("—"))
                        : "");
    }
    md += md_row(row);
  }
  return md;
}

// Entropy against rho, one point per (map, source).
std::string shape_plot(const std::vector<Group>& gs, const std::string& plot_dir) {
  std::string data;
  for (const auto& g : gs) {
    const auto r = sample_stats(g.spearman);
    if (!r.n) continue;
    data += fmt::format("{} {} \"{} {}\"\n", sample_stats(g.entropy).mean, r.mean, g.map, g.source);
  }
  write_file_atomic(plot_dir + "/shape.dat", data);
  return svg_links(render_plot(plot_dir, "shape",
                               "set title 'attention rows: entropy vs rank agreement with "
                               "softmax (mean over heads)'\nset xlabel 'row entropy (nats, lower "
                               "= spikier)'\nset ylabel 'Spearman rho with softmax'\nset grid\n"
                               "set key off\nset offsets graph 0.05, graph 0.2, graph 0.1, graph "
                               "0.1\nplot 'shape.dat' using 1:2 with points pt 7 ps 1.5, "
                               "'shape.dat' using 1:2:3 with labels offset 0,1 font ',8'\n"),
                   "entropy vs Spearman");
}

// The mean entropy of uniform causal rows t = 1..T-1 (row t: log(t + 1)), the most diffuse.
double uniform_entropy(int64_t T) {
  double s = 0;
  for (int64_t t = 1; t < T; ++t) s += std::log(t + 1.0);
  return T > 1 ? s / static_cast<double>(T - 1) : 0;
}

std::string attention_shape_report(const std::vector<nlohmann::json>& json_rows,
                                   const std::string& plot_dir) {
  const auto rows = read_rows_of_kind<AttentionShapeRow>(json_rows, "attention_shape");
  std::vector<Group> gs;
  for (const auto& r : rows) {
    auto it = std::find_if(gs.begin(), gs.end(),
                           [&](const Group& g) { return g.map == r.map && g.source == r.source; });
    if (it == gs.end()) it = gs.insert(gs.end(), Group{r.map, r.source});
    it->cells.insert(r.cell);
    it->entropy.push_back(r.entropy);
    it->entropy_softmax.push_back(r.entropy_softmax);
    it->negative.push_back(r.negative_mass);
    it->entropy_by_layer[r.layer].push_back(r.entropy);
    if (r.spearman) {
      it->spearman.push_back(*r.spearman);
      it->spearman_by_layer[r.layer].push_back(*r.spearman);
    }
  }
  std::string md = "## Spikiness and monotonicity\n\n";
  if (rows.empty()) return md + "No model finished.\n";
  md += fmt::format(
      "Teacher models/teacher-en; the first {} windows of {} tokens of its valid split. Per "
      "attention row (query t ≥ 1, keys 0..t): the entropy in nats of the weights (lower = "
      "spikier; a uniform row over n keys has log n) and Spearman's ρ between the linear "
      "attention's weights and the softmax weights over the same keys (softmax is increasing in "
      "the query-key score, so this is also ρ with the scores: monotonicity). Means over rows, "
      "then mean ± sd over heads (layers × heads, pooled over the seeds' models). Both "
      "attentions read the teacher's layer inputs. \"untrained\" = the maps as conversion "
      "initialises them; \"transfer\" = after Hedgehog attention transfer; \"finetuned\" = after "
      "the conversion grid's finetuning (docs/results/conversion-full), \"transfer+finetuned\" "
      "both. Negative weight: the "
      "share of each row's |weight| that is negative (RFA's trigonometric features), clamped to "
      "0 for the entropy. For scale: uniform rows (every key alike) have mean entropy {:.3f} "
      "here.\n\n",
      rows.front().windows, rows.front().length, uniform_entropy(rows.front().length));
  md += summary_table(gs);
  md += "\n### By layer (entropy / ρ, mean over heads)\n\n" + layer_table(gs);
  if (plot_dir.empty()) return md;
  return md + "\n## Plots\n\n" + shape_plot(gs, plot_dir);
}

}  // namespace

}  // namespace seqlab
