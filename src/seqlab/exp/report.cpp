#include "seqlab/exp/report.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/exp/cells/plain.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

// Rows of one configuration, over seeds: accuracies by test length.
struct Group {
  std::string task, arch;
  int64_t d_model = 0, n_layer = 0;
  double scale = 0;
  int64_t train_length = 0;
  std::map<int64_t, std::vector<double>> acc;       // test length -> one accuracy per seed
  std::map<int64_t, std::vector<double>> accepted;  // the same for anbn's "accepted", if any
  // Tasks that score by kind of example (dyck_bounded's <kind>_share / <kind>_right, shares of
  // all test sequences): test length -> kind -> one accuracy (right / share) per seed, and the
  // kind's share of the test set per seed.
  std::map<int64_t, std::map<std::string, std::vector<double>>> kind_acc, kind_share;
  std::set<uint64_t> seeds;
};

// task, arch, d_model, n_layer, saturation scale, training length, training task: rows that agree
// on all of these differ only in their seed.
using Key = std::tuple<std::string, std::string, int64_t, int64_t, double, int64_t, std::string>;

std::vector<PlainRow> plain_rows(const std::vector<nlohmann::json>& rows) {
  std::vector<PlainRow> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    auto p = PlainRow::from_json(r);
    if (!p.is_valid()) out.push_back(std::move(p));  // validation rows choose, never report
  }
  return out;
}

std::vector<std::string> task_order(const std::vector<PlainRow>& rows) {
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (std::find(order.begin(), order.end(), r.task) == order.end()) order.push_back(r.task);
  return order;
}

constexpr std::string_view kShareSuffix = "_share", kRightSuffix = "_right";

// Adds the row's per-kind accuracies: every "<kind>_share" that has a "<kind>_right" beside it.
// A kind absent from this test set (share 0) has no accuracy and is skipped.
void add_kinds(const PlainRow& r, Group& g) {
  for (const auto& [key, val] : r.extra.items()) {
    if (key.size() <= kShareSuffix.size() ||
        key.compare(key.size() - kShareSuffix.size(), kShareSuffix.size(), kShareSuffix) != 0)
      continue;
    const std::string kind = key.substr(0, key.size() - kShareSuffix.size());
    const auto right = r.metric(kind + std::string(kRightSuffix));
    if (!val.is_number() || !right) continue;
    const double share = val.get<double>();
    g.kind_share[r.test_length][kind].push_back(share);
    if (share > 0) g.kind_acc[r.test_length][kind].push_back(*right / share);
  }
}

std::map<Key, Group> group_rows(const std::vector<PlainRow>& rows) {
  std::map<Key, Group> groups;
  for (const auto& r : rows) {
    Key k{r.task, r.arch, r.d_model, r.n_layer, r.scale(), r.train_length, r.train_task};
    auto& g = groups[k];
    g.task = r.task;
    g.arch = r.arch;
    g.d_model = r.d_model;
    g.n_layer = r.n_layer;
    g.scale = r.scale();
    g.train_length = r.train_length;
    g.acc[r.test_length].push_back(r.accuracy);
    if (const auto accepted = r.metric("accepted")) g.accepted[r.test_length].push_back(*accepted);
    g.seeds.insert(r.seed);
    add_kinds(r, g);
  }
  return groups;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

std::string acc_cell(const std::vector<double>& v) {
  if (v.empty()) return "";
  const double m = mean(v), best = *std::max_element(v.begin(), v.end());
  std::string s = v.size() > 1 ? fmt::format("{:.3f} ±{:.3f} ({:.3f})", m, half_width_95(v), best)
                               : fmt::format("{:.3f}", m);
  return m >= kSuccessAccuracy ? s + " ✓" : s;
}

// The input-blind baseline of a task's plain rows (blind_accuracy, exp/cell.h): test length ->
// mean over seeds. Every architecture of one seed shares the test set, so each (length, seed)
// counts once.
std::map<int64_t, double> blind_means(const std::vector<PlainRow>& rows, const std::string& task) {
  std::map<int64_t, std::map<uint64_t, double>> by_len;
  for (const auto& r : rows)
    if (r.task == task && !r.saturation_scale && r.blind_accuracy)
      by_len[r.test_length][r.seed] = *r.blind_accuracy;
  std::map<int64_t, double> out;
  for (const auto& [L, seeds] : by_len) {
    double sum = 0;
    for (const auto& [seed, v] : seeds) sum += v;
    out[L] = sum / static_cast<double>(seeds.size());
  }
  return out;
}

// Accuracy by test length, one row per configuration; saturated groups (saturation) are named by
// their scale instead of depth and training length.
std::string table_for(const std::vector<const Group*>& gs, bool saturation,
                      const std::map<int64_t, double>& blind = {}) {
  std::set<int64_t> lengths;
  for (auto* g : gs)
    for (auto& [L, v] : g->acc) lengths.insert(L);
  std::vector<std::string> head =
      saturation ? std::vector<std::string>{"arch", "d_model", "scale", "seeds"}
                 : std::vector<std::string>{"arch", "d_model", "n_layer", "seeds", "train ≤"};
  const size_t lead = head.size();
  for (auto L : lengths) head.push_back(std::to_string(L));
  std::string s = md_header(head, std::string(head.size(), 'l'));
  for (auto* g : gs) {
    std::vector<std::string> row = {g->arch, std::to_string(g->d_model)};
    if (saturation) {
      row.push_back(fmt::format("{}", g->scale));
      row.push_back(std::to_string(g->seeds.size()));
    } else {
      row.push_back(std::to_string(g->n_layer));
      row.push_back(std::to_string(g->seeds.size()));
      row.push_back(std::to_string(g->train_length));
    }
    for (auto L : lengths) row.push_back(g->acc.count(L) ? acc_cell(g->acc.at(L)) : "");
    s += md_row(row);
  }
  if (!saturation && !blind.empty()) {
    s += "| *input-blind* |";  // its empty cells are written " |", not md_row's "  |"
    for (size_t i = 1; i < lead; ++i) s += " |";
    for (auto L : lengths) s += blind.count(L) ? fmt::format(" *{:.3f}* |", blind.at(L)) : " |";
    s += "\n";
  }
  return s;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

// gnuplot's default line colours repeat after 8, so a chomsky plot's ninth architecture drew in
// the first one's colour. Types 9-16 get colours of their own; 1-8 keep gnuplot's.
constexpr const char* kExtraLineColours =
    "set linetype 9 lc rgb '#cc79a7'\nset linetype 10 lc rgb '#8c564b'\n"
    "set linetype 11 lc rgb '#bcbd22'\nset linetype 12 lc rgb '#17becf'\n"
    "set linetype 13 lc rgb '#7b4173'\nset linetype 14 lc rgb '#393b79'\n"
    "set linetype 15 lc rgb '#637939'\nset linetype 16 lc rgb '#843c39'\n"
    "set linetype cycle 16\n";

std::vector<std::string> render_plot(const std::string& dir_s, const std::string& stem,
                                     const std::string& body) {
  const fs::path dir(dir_s);
  std::vector<std::string> made;
  for (auto [term, ext] :
       {std::pair{"svg size 720,480 dynamic", "svg"}, std::pair{"pngcairo size 900,600", "png"}}) {
    const std::string gp = stem + "." + ext + ".gp";
    // noenhanced: task names contain '_', which enhanced text would turn into subscripts.
    // Every name in the script is relative to `dir` and gnuplot runs there, so a results
    // directory can be moved (or committed) and its scripts rerun where they lie.
    write_file_atomic((dir / gp).string(),
                      fmt::format("set terminal {} noenhanced\nset output '{}'\n{}{}", term,
                                  stem + "." + ext, kExtraLineColours, body));
    const auto cmd =
        "cd " + shell_quote(dir.string()) + " && gnuplot " + shell_quote(gp) + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0)
      made.push_back(stem + "." + ext);
    else
      log_warn("gnuplot failed on {}", (dir / gp).string());
  }
  return made;
}

namespace {

std::vector<std::string> render(const fs::path& dir, const std::string& stem,
                                const std::string& body) {
  return render_plot(dir.string(), stem, body);
}

std::string plots_for_task(const fs::path& dir, const std::string& task,
                           const std::vector<const Group*>& gs, bool heatmap,
                           const std::map<int64_t, double>& blind) {
  std::string md;
  // Accuracy against test length, one line per architecture, width and depth. Configurations that
  // differ only in their training length (separations trains and tests each length on its own)
  // join one line, a point per length; if two of them share a test length, each keeps its own
  // line, its training length in the title.
  const auto lines_of = [&](bool by_train_length) {
    std::vector<std::pair<std::string, std::map<int64_t, double>>> lines;
    bool clash = false;
    for (auto* g : gs) {
      std::string title = fmt::format("{} d={} L={}", g->arch, g->d_model, g->n_layer);
      if (by_train_length) title += fmt::format(" train<={}", g->train_length);
      auto it =
          std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == title; });
      if (it == lines.end()) it = lines.insert(lines.end(), {title, {}});
      for (auto& [L, v] : g->acc) clash |= !it->second.emplace(L, mean(v)).second;
    }
    return std::pair{lines, clash};
  };
  auto [lines, clash] = lines_of(false);
  if (clash) lines = lines_of(true).first;
  std::string data, plot_cmds;
  size_t idx = 0;
  for (const auto& [title, points] : lines) {
    std::string block;
    for (auto& [L, v] : points) block += fmt::format("{} {}\n", L, v);
    data += gp_block(title, block);
    plot_cmds += fmt::format("{}'{}' index {} with linespoints title '{}'", gp_sep(idx),
                             task + ".dat", idx, title);
    ++idx;
  }
  if (!blind.empty()) {
    std::string block;
    for (auto& [L, v] : blind) block += fmt::format("{} {}\n", L, v);
    data += gp_block("input-blind baseline", block);
    plot_cmds += fmt::format(
        ", '{}' index {} with lines dashtype 2 lc rgb 'gray40' title "
        "'input-blind'",
        task + ".dat", idx);
  }
  write_file_atomic((dir / (task + ".dat")).string(), data);
  auto imgs =
      render(dir, task,
             fmt::format("set title '{}: accuracy vs test length (mean over seeds)'\n"
                         "set xlabel 'test length'\nset ylabel 'accuracy'\n"
                         "set yrange [0:1.05]\nset logscale x 2\nset key outside right\nset grid\n"
                         "plot {}\n",
                         task, plot_cmds));
  md += svg_links(imgs, task);
  if (!heatmap) return md;
  // Width x length heatmaps, one per architecture.
  std::map<std::string, std::vector<const Group*>> by_arch;
  for (auto* g : gs) by_arch[g->arch].push_back(g);
  for (auto& [arch, ags] : by_arch) {
    std::string hd;
    for (auto* g : ags)
      for (auto& [L, v] : g->acc) hd += fmt::format("{} {} {}\n", L, g->d_model, mean(v));
    const std::string stem = task + "_heatmap_" + arch;
    write_file_atomic((dir / (stem + ".dat")).string(), hd);
    auto hm = render(dir, stem,
                     fmt::format("set title '{1} {2}: accuracy over width and length'\n"
                                 "set xlabel 'test length'\nset ylabel 'd_model'\n"
                                 "set cbrange [0:1]\nset palette defined (0 'white', 1 'navy')\n"
                                 "set logscale xy 2\nset offsets graph 0.12, graph 0.12, "
                                 "graph 0.12, graph 0.12\n"
                                 "plot '{0}' using 1:2:3 with points pt 5 ps 6 palette notitle, "
                                 "'{0}' using 1:2:(sprintf('%.2f', $3)) with labels offset 0,2 "
                                 "notitle\n",
                                 stem + ".dat", task, arch));
    md += svg_links(hm, task + " " + arch);
  }
  return md;
}

// One row per (configuration, test length) that has per-kind scores, one column per kind: the
// accuracy on that kind, mean over seeds (best seed); then each length's share of every kind.
std::string kinds_table(const std::vector<const Group*>& gs) {
  std::set<std::string> kinds;
  std::map<int64_t, std::map<std::string, std::vector<double>>> shares;
  for (auto* g : gs)
    for (auto& [L, by_kind] : g->kind_share)
      for (auto& [kind, v] : by_kind) {
        kinds.insert(kind);
        auto& all = shares[L][kind];
        all.insert(all.end(), v.begin(), v.end());
      }
  if (kinds.empty()) return "";
  std::vector<std::string> head = {"arch", "d_model", "n_layer", "seeds", "test length"};
  head.insert(head.end(), kinds.begin(), kinds.end());
  std::string s = md_header(head, std::string(head.size(), 'l'));
  for (auto* g : gs)
    for (auto& [L, by_kind] : g->kind_share) {
      std::vector<std::string> row = {g->arch, std::to_string(g->d_model),
                                      std::to_string(g->n_layer), std::to_string(g->seeds.size()),
                                      std::to_string(L)};
      const auto acc = g->kind_acc.find(L);
      for (auto& k : kinds) {
        std::string cell;
        if (acc != g->kind_acc.end())
          if (auto it = acc->second.find(k); it != acc->second.end()) cell = acc_cell(it->second);
        row.push_back(cell);
      }
      s += md_row(row);
    }
  for (auto& [L, by_kind] : shares) {
    s += fmt::format("| *share of test set* | | | | {} |", L);
    for (auto& k : kinds)
      s += by_kind.count(k) ? fmt::format(" *{:.3f}* |", mean(by_kind.at(k))) : " |";
    s += "\n";
  }
  return s;
}

// The differences a claim about a task rests on: at the longest test length every configuration
// reached, the best mean accuracy against each other configuration, with Welch's interval.
std::string longest_length_differences(const std::vector<const Group*>& gs) {
  if (gs.size() < 2) return "";
  int64_t L = -1;
  for (auto* g : gs)
    if (!g->acc.empty()) L = L < 0 ? g->acc.rbegin()->first : std::min(L, g->acc.rbegin()->first);
  std::set<std::string> archs;
  for (auto* g : gs) archs.insert(g->arch);
  std::vector<std::pair<std::string, std::vector<double>>> samples;
  for (auto* g : gs) {
    if (!g->acc.count(L)) return "";
    samples.emplace_back(archs.size() == gs.size()
                             ? g->arch
                             : fmt::format("{} (d {}, {} layers, train ≤ {})", g->arch, g->d_model,
                                           g->n_layer, g->train_length),
                         g->acc.at(L));
  }
  return fmt::format(
      "Differences at test length {} (the longest every configuration reached): the best mean "
      "against each other configuration.\n\n{}\n",
      L, best_vs_rest(samples, 3));
}

}  // namespace

namespace {

std::string tables_of(const std::vector<PlainRow>& rows) {
  auto groups = group_rows(rows);
  std::string md;
  for (const auto& task : task_order(rows)) {
    std::vector<const Group*> plain, sat;
    for (auto& [k, g] : groups)
      if (g.task == task) (g.scale == 0 ? plain : sat).push_back(&g);
    const auto blind = blind_means(rows, task);
    md += fmt::format(
        "### {}\n\nAccuracy by test length: mean over seeds ±h (best seed), h the half-width of "
        "the mean's 95% Student t interval (none for one seed); ✓ = mean ≥ {:.0f}%.{}\n\n{}\n",
        task, kSuccessAccuracy * 100,
        blind.empty() ? ""
                      : " *input-blind*: the accuracy of always guessing the class most frequent "
                        "at each scored position, on the same test sequences; a model at or "
                        "below it shows nothing it read from the input.",
        table_for(plain, false, blind));
    md += longest_length_differences(plain);
    std::vector<Group> acc_groups;
    for (auto* g : plain)
      if (!g->accepted.empty()) {
        acc_groups.push_back(*g);
        acc_groups.back().acc = g->accepted;
      }
    if (!acc_groups.empty()) {
      std::vector<const Group*> ptrs;
      for (auto& g : acc_groups) ptrs.push_back(&g);
      md += fmt::format(
          "Accepted: fraction of strings whose every determined next symbol gets "
          "probability above the threshold.\n\n{}\n",
          table_for(ptrs, false));
    }
    if (const auto kt = kinds_table(plain); !kt.empty())
      md += fmt::format(
          "By kind of test example: accuracy on each kind (right / its share of the test "
          "sequences), mean over seeds ±h (best seed); the last rows give each kind's "
          "share.\n\n{}\n",
          kt);
    if (!sat.empty())
      md += fmt::format(
          "Saturation: after training, the weights and biases of the recurrence (w_ih, "
          "w_hh) scaled by a growing factor (Merrill et al.'s saturated limit).\n\n{}\n",
          table_for(sat, true));
  }
  return md;
}

// The plots of the accuracy-per-length report, rendered into `plot_dir`.
std::string plots_of(const std::vector<std::string>& heatmap_tasks,
                     const std::vector<PlainRow>& rows, const std::string& plot_dir) {
  const fs::path dir = plot_dir;
  ensure_dir(dir.string());
  auto groups = group_rows(rows);
  std::string md = "\n## Plots\n\n";
  for (const auto& task : task_order(rows)) {
    std::vector<const Group*> gs;
    for (auto& [k, g] : groups)
      if (g.task == task && g.scale == 0) gs.push_back(&g);
    const bool hm =
        std::find(heatmap_tasks.begin(), heatmap_tasks.end(), task) != heatmap_tasks.end();
    md += plots_for_task(dir, task, gs, hm, blind_means(rows, task));
  }
  return md;
}

// The date a report says it was generated: today (UTC), or SOURCE_DATE_EPOCH's day when that is
// set (the reproducible-builds convention), so that scripts/check_reports.sh can rebuild a
// committed report byte for byte.
std::string report_date() {
  std::time_t t = std::time(nullptr);
  if (const char* e = std::getenv("SOURCE_DATE_EPOCH"); e && *e) {
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    SEQLAB_CHECK(*end == '\0' && v >= 0, "SOURCE_DATE_EPOCH must be seconds since 1970, got '{}'",
                 e);
    t = static_cast<std::time_t>(v);
  }
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&t));
  return date;
}

}  // namespace

std::string report_tables(const std::vector<nlohmann::json>& rows) {
  return tables_of(plain_rows(rows));
}

std::string report_plots(const std::vector<nlohmann::json>& rows, const std::string& plot_dir,
                         const std::vector<std::string>& heatmap_tasks) {
  return plots_of(heatmap_tasks, plain_rows(rows), plot_dir);
}

std::string write_report(const SuiteSpec& spec, const std::vector<nlohmann::json>& rows,
                         const std::string& out, bool plots, int64_t failed_cells) {
  std::string md = fmt::format(
      "# Suite `{}`\n\n{}\n\nGenerated {} from `results.jsonl` ({} rows, "
      "{} cells failed).\n\n",
      spec.name, spec.description, report_date(), rows.size(), failed_cells);
  if (!spec.claims.empty()) md += "## What the papers claim\n\n" + spec.claims + "\n\n";
  const bool want_plots = plots && !rows.empty();
  if (want_plots && !have_gnuplot()) log_warn("gnuplot not found: no plots (install gnuplot-nox)");
  const bool make_plots = want_plots && have_gnuplot();
  if (spec.custom_report) {
    std::string plot_dir;
    if (make_plots) {
      plot_dir = (fs::path(out) / "plots").string();
      ensure_dir(plot_dir);
    }
    md += spec.custom_report(rows, plot_dir);
  } else {
    const auto plain = plain_rows(rows);
    md += "## Results\n\n" + tables_of(plain);
    if (make_plots) md += plots_of(spec.heatmap_tasks, plain, (fs::path(out) / "plots").string());
  }
  const std::string path = (fs::path(out) / "report.md").string();
  write_file_atomic(path, md);
  return path;
}

}  // namespace seqlab
