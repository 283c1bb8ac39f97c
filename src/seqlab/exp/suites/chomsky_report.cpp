// The `chomsky` suite's report: Deletang et al.'s score (the accuracy averaged over test input
// lengths 41..500), then the standard accuracy tables at a few lengths and the plots over all.
#include "seqlab/exp/report.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/suites/chomsky.h"
#include "seqlab/exp/tables.h"

#include "seqlab/core/atomic_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace seqlab {

namespace {

const ChomskyTask* find_task(const std::string& name) {
  for (const auto& t : chomsky_tasks())
    if (t.task == name) return &t;
  return nullptr;
}

// The input length n of a row, when it is a chomsky task's plain (unsaturated) row.
std::optional<int64_t> row_n(const nlohmann::json& r) {
  if (r.contains("saturation_scale") || !r.contains("test_length") || !r.contains("task"))
    return std::nullopt;
  const auto* t = find_task(r["task"].get<std::string>());
  return t ? t->input_length(r["test_length"].get<int64_t>()) : std::nullopt;
}

using BySeed = std::map<uint64_t, std::map<int64_t, double>>;  // seed -> n -> accuracy

// The weighted mean over the score lengths (chomsky_score_weights) of each seed that tested all
// of them.
std::vector<double> seed_scores(const BySeed& by_seed) {
  const auto want = chomsky_score_lengths();
  const auto w = chomsky_score_weights();
  std::vector<double> out;
  for (const auto& [seed, acc] : by_seed) {
    if (acc.size() != want.size()) continue;
    double sum = 0;
    for (size_t i = 0; i < want.size(); ++i) sum += w[i] * acc.at(want[i]);
    out.push_back(sum);
  }
  return out;
}

struct Scores {
  std::vector<std::string> tasks, archs;  // in the order the rows name them
  // (task, arch) -> one score per complete seed (none: the cell is absent). An arch that ran in
  // more than one configuration (width, depth, training length) gets one column per configuration.
  std::map<std::pair<std::string, std::string>, std::vector<double>> cells;
  // task -> the input-blind guess's score per seed; a seed's test set is shared by every
  // architecture, so it counts once.
  std::map<std::string, std::vector<double>> blind;
  std::set<int64_t> tested_n;  // every n the rows test, for the note when none is scored
};

// A row's configuration: width, depth and the training input length n. The training stream length
// differs between tasks for the same n (even_pairs trains to T = 42 for n = 40), so n, not T,
// tells two configurations of one architecture apart.
std::string config_of(const nlohmann::json& r) {
  const auto T = r.value("train_length", int64_t{0});
  const auto* t = find_task(r.value("task", std::string()));
  const auto n = t ? t->input_length(T) : std::nullopt;
  return fmt::format("d{} L{} {}", r.value("d_model", int64_t{0}), r.value("n_layer", int64_t{0}),
                     n ? fmt::format("n<={}", *n) : fmt::format("T<={}", T));
}

Scores collect(const std::vector<nlohmann::json>& rows) {
  Scores s;
  const auto want = chomsky_score_lengths();
  std::map<std::pair<std::string, std::string>, BySeed> acc;
  std::map<std::string, BySeed> blind;
  std::map<std::string, std::set<std::string>> configs;  // arch -> its configurations
  for (const auto& r : rows)
    if (row_n(r)) configs[r.value("arch", std::string())].insert(config_of(r));
  for (const auto& r : rows) {
    const auto n = row_n(r);
    if (!n) continue;
    s.tested_n.insert(*n);
    if (std::find(want.begin(), want.end(), *n) == want.end()) continue;
    const auto task = r["task"].get<std::string>();
    auto arch = r.value("arch", std::string());
    if (configs[arch].size() > 1) arch += " " + config_of(r);
    if (std::find(s.tasks.begin(), s.tasks.end(), task) == s.tasks.end()) s.tasks.push_back(task);
    if (std::find(s.archs.begin(), s.archs.end(), arch) == s.archs.end()) s.archs.push_back(arch);
    const auto seed = r.value("seed", uint64_t{0});
    acc[{task, arch}][seed][*n] = r.value("accuracy", 0.0);
    if (r.contains("blind_accuracy")) blind[task][seed][*n] = r["blind_accuracy"].get<double>();
  }
  for (const auto& [key, by_seed] : acc) s.cells[key] = seed_scores(by_seed);
  for (const auto& [task, by_seed] : blind) s.blind[task] = seed_scores(by_seed);
  return s;
}

// The two matrices (best seed, as published; mean over seeds with its interval) and the
// best-against-rest differences per task.
std::string score_tables(const Scores& s) {
  std::vector<std::string> head = {"task", "tier"};
  for (const auto& a : s.archs) head.push_back(a);
  head.push_back("*input-blind*");
  std::string best = md_header(head, std::string(head.size(), 'l'));
  std::string mean = best, diffs;
  for (const auto& task : s.tasks) {
    std::vector<std::string> rb = {task, find_task(task)->tier}, rm = rb;
    const auto blind = s.blind.count(task) ? s.blind.at(task) : std::vector<double>{};
    std::vector<std::pair<std::string, std::vector<double>>> samples;
    for (const auto& arch : s.archs) {
      auto it = s.cells.find({task, arch});
      const auto v = it == s.cells.end() ? std::vector<double>{} : it->second;
      if (v.empty()) {
        rb.emplace_back();
        rm.emplace_back();
        continue;
      }
      const double top = *std::max_element(v.begin(), v.end());
      rb.push_back(fmt::format("{:.3f}{}", top, top >= kSuccessAccuracy ? " ✓" : ""));
      rm.push_back(fmt_mean_sd_ci(sample_stats(v), 3) +
                   (v.size() > 1 ? fmt::format(" (n={})", v.size()) : ""));
      samples.emplace_back(arch, v);
    }
    const auto b =
        blind.empty() ? std::string() : fmt::format("*{:.3f}*", sample_stats(blind).mean);
    rb.push_back(b);
    rm.push_back(b);
    best += md_row(rb);
    mean += md_row(rm);
    if (const auto lines = best_vs_rest(samples, 3); !lines.empty())
      diffs += fmt::format("**{}**, the best mean against each other:\n\n{}\n", task, lines);
  }
  return fmt::format(
      "Best seed (the paper's Table 2 reports the best run); ✓ = at least {:.0f}%:\n\n{}\n"
      "Mean ± sd over seeds [95% t interval] (n seeds):\n\n{}\n{}",
      kSuccessAccuracy * 100, best, mean, diffs);
}

// A heatmap of the mean score, task × architecture, rendered into plot_dir.
std::string score_plot(const Scores& s, const std::string& plot_dir) {
  std::string data, xtics, ytics;
  for (size_t x = 0; x < s.archs.size(); ++x)
    xtics += fmt::format("{}'{}' {}", x ? ", " : "", s.archs[x], x);
  for (size_t y = 0; y < s.tasks.size(); ++y) {
    ytics += fmt::format("{}'{}' {}", y ? ", " : "", s.tasks[y], y);
    for (size_t x = 0; x < s.archs.size(); ++x) {
      auto it = s.cells.find({s.tasks[y], s.archs[x]});
      if (it != s.cells.end() && !it->second.empty())
        data += fmt::format("{} {} {:.4f}\n", x, y, sample_stats(it->second).mean);
    }
  }
  write_file_atomic((std::filesystem::path(plot_dir) / "score.dat").string(), data);
  const auto imgs = render_plot(
      plot_dir, "score",
      fmt::format("set title 'Deletang et al. score (accuracy averaged over n = 41-500), mean "
                  "over seeds'\nset xtics ({}) rotate by -30\nset ytics ({})\n"
                  "set xrange [-0.5:{}.5]\nset yrange [{}.5:-0.5]\nset cbrange [0:1]\n"
                  "set palette defined (0 'white', 1 '#3b7dd8')\nunset key\n"
                  "plot 'score.dat' using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 "
                  "noborder lc palette, 'score.dat' using 1:2:(sprintf('%.2f', $3)) with labels\n",
                  xtics, ytics, s.archs.size() - 1, s.tasks.size() - 1));
  return svg_links(imgs, "score");
}

std::string score_section(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  const auto s = collect(rows);
  const auto want = chomsky_score_lengths();
  std::string md = fmt::format(
      "## Deletang et al.'s score\n\nThe paper's measure: per-token accuracy on the scored "
      "positions, averaged over test input lengths n = {}–{}. The full grid samples n = 41 and "
      "every 20th n from 60 to {} ({} lengths, 128 test sequences each, 512 at n = 100, 200, "
      "500) and weights them by the trapezoid rule over n, which estimates the plain mean over "
      "every n. A seed is scored only when it tested all of them. Parity scores every prefix "
      "(the paper: the final output only), so its score includes in-range prefixes; "
      "modular_arithmetic has odd-length expressions only and tests n − 1 at an even n. The "
      "paper gives the best of 10 seeds × 3 learning rates at 10⁶ steps.\n\n",
      kChomskyTrainN + 1, kChomskyScoreMaxN, kChomskyScoreMaxN, want.size());
  bool any = false;
  for (const auto& [key, v] : s.cells) any |= !v.empty();
  if (!any)
    return md + fmt::format(
                    "Not computed: no cell tested every one of these lengths (the rows test n "
                    "= {}).\n\n",
                    fmt::join(s.tested_n, ", "));
  md += score_tables(s);
  if (!plot_dir.empty()) md += score_plot(s, plot_dir);
  return md + "\n";
}

}  // namespace

std::string chomsky_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  // The tables show the lengths the grid has always tested; the plots show every length.
  std::vector<nlohmann::json> shown;
  for (const auto& r : rows) {
    const auto n = row_n(r);
    if (!n || chomsky_table_length(*n)) shown.push_back(r);
  }
  std::string md = score_section(rows, plot_dir);
  md += "## Results\n\n" + report_tables(shown);
  if (!plot_dir.empty()) md += report_plots(rows, plot_dir);
  return md;
}

}  // namespace seqlab
