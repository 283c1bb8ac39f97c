// Suite `exit_swag`: early exit with calibrated confidence (Schwartz et al. 2020, "The Right Tool
// for the Job") and SWAG uncertainty (Maddox et al. 2019; Talman et al. 2023) on WordNet
// supersenses, WordNet-relation NLI and a synthetic task of known difficulty and known annotator
// disagreement.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/classify.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

namespace seqlab {

namespace {

std::string exit_swag_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

const std::vector<double> kThresholds = {0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.01};

}  // namespace

SuiteSpec exit_swag_suite(bool quick) {
  SuiteSpec s;
  s.name = "exit_swag";
  s.description =
      "early exit with calibrated confidence (Schwartz+ 2020) and SWAG uncertainty (Maddox+ 2019, "
      "Talman+ 2023) on supersense, pair_nli, difficulty and pointer_chase";
  s.claims =
      "- Schwartz et al. (2020): classifiers after several layers, temperature-calibrated, and "
      "one confidence threshold chosen at inference time trade speed for accuracy without "
      "retraining; on their tasks the early-exit model matches the full model's accuracy at a "
      "fraction of the computation (up to ~5x faster at similar accuracy, and easy instances "
      "exit early).\n"
      "- Temperature scaling (Guo et al. 2017) lowers the calibration error of each exit.\n"
      "- Maddox et al. (2019), Talman et al. (2023): SWAG improves NLL and calibration over plain "
      "training and SWA at similar accuracy, and its predictive uncertainty tracks human "
      "annotator disagreement better (ChaosNLI: higher correlation with annotator entropy).";
  const int64_t D = quick ? 64 : 128, L = 4;
  const int64_t text_len = quick ? 64 : 96;
  const int64_t eval_n = quick ? 1000 : 4000, cal_n = quick ? 1000 : 3000;
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  auto model = [&](const std::string& arch, const std::string& exits, int64_t max_ctx) {
    return grid_model(arch, D, L, max_ctx,
                      {{"head", "classify"},
                       {"n_classes", 2},
                       {"exits", exits},
                       {"n_head", 4},
                       {"mlp_ratio", 4}});
  };
  auto train = [&](int64_t steps, uint64_t seed) {
    auto t = grid_train(steps, 32, 1e-3, seed);
    t["warmup"] = std::max<int64_t>(1, steps / 20);
    return t;
  };
  struct TaskSpec {
    std::string name;
    int64_t len, steps;
  };
  const std::vector<TaskSpec> exit_tasks = {
      {"supersense", text_len, quick ? 1500 : 6000},
      {"difficulty", 32, quick ? 600 : 2000},
  };
  for (uint64_t seed : seeds) {
    for (const auto& t : exit_tasks) {
      for (const std::string arch : {"softmax", "linear"}) {
        const std::string id = fmt::format("exit_{}_{}_s{}", t.name, arch, seed);
        s.cells.push_back({{"id", id},
                           {"kind", "classify_exit"},
                           {"label", fmt::format("{} {}", t.name, arch)},
                           {"model", model(arch, "1,2,3", t.len)},
                           {"task", grid_task(t.name, t.len, t.len)},
                           {"train", train(t.steps, seed)},
                           {"calibrate_n", cal_n},
                           {"eval_n", eval_n},
                           {"thresholds", kThresholds}});
      }
    }
    // SWAG: the last 40% of the run at a constant learning rate, a snapshot every 10 steps.
    const std::vector<TaskSpec> swag_tasks = {
        {"difficulty", 32, quick ? 600 : 2000},
        {"pair_nli", quick ? 96 : 160, quick ? 1500 : 6000},
    };
    for (const auto& t : swag_tasks) {
      auto tr = train(t.steps, seed);
      tr["swag_start"] = t.steps * 6 / 10;
      tr["swag_every"] = 10;
      tr["swag_rank"] = 20;
      tr["swag_lr"] = 5e-4;
      s.cells.push_back({{"id", fmt::format("swag_{}_s{}", t.name, seed)},
                         {"kind", "classify_swag"},
                         {"label", t.name},
                         {"model", model("softmax", "", t.len)},
                         {"task", grid_task(t.name, t.len, t.len)},
                         {"train", tr},
                         {"eval_n", eval_n},
                         {"samples", quick ? 10 : 30},
                         {"scale", 0.5}});
    }
  }
  // A model whose first exit is much worse than its last: pointer chasing with 1 or 2 hops, one
  // attention layer per hop (tasks/pointer_chase.h). Three seeds in the quick grid too, softmax
  // only; batch 128 at lr 3e-3 (with which a 2-layer model, tried alone, learned the second hop
  // in 3000 steps; at batch 32 it had not in 1500), and a tied head reading the symbols' rows.
  for (uint64_t seed : {0, 1, 2}) {
    const int64_t T = 17, steps = 3000;
    auto tr = grid_train(steps, 128, 3e-3, seed);
    tr["warmup"] = steps / 20;
    auto m = model("softmax", "1,2,3", T);
    m["pooling"] = "last";
    m["tie_tag_head"] = true;
    s.cells.push_back({{"id", fmt::format("exit_pointer_chase_softmax_s{}", seed)},
                       {"kind", "classify_exit"},
                       {"label", "pointer_chase softmax"},
                       {"model", m},
                       {"task", grid_task("pointer_chase", T, T, {{"depth", 2}})},
                       {"train", tr},
                       {"calibrate_n", cal_n},
                       {"eval_n", eval_n},
                       {"thresholds", kThresholds}});
  }
  s.custom_report = exit_swag_report;
  return s;
}

namespace {

// Mean and sd over seeds of one field of a group of rows.
template <class Row, class Field>
SampleStats over_seeds(const std::vector<Row>& rs, Field Row::*field) {
  std::vector<double> v;
  for (const auto& r : rs) {
    if constexpr (std::is_same_v<Field, std::optional<double>>)
      v.push_back((r.*field).value_or(0.0));
    else
      v.push_back(static_cast<double>(r.*field));
  }
  return sample_stats(v);
}

// mean ± sd [95% t interval] over seeds; one seed: its value alone (the report's header says
// how many seeds, and that one has no interval).
std::string fmt_ms(const SampleStats& p, int prec = 4) {
  return p.n > 1 ? fmt_mean_sd_ci(p, prec) : fmt::format("{:.{}f}", p.mean, prec);
}

// Rows by label, then by threshold / exit / method, over seeds; labels in order of appearance.
struct Grouped {
  std::map<std::string, std::map<double, std::vector<ExitCurveRow>>> curve;
  std::map<std::string, std::map<int64_t, std::vector<ExitCalibrationRow>>> cal;
  std::map<std::string, std::map<std::string, std::vector<UncertaintyRow>>> unc;
  std::vector<std::string> curve_order, unc_order;
};

Grouped group(const std::vector<nlohmann::json>& rows) {
  Grouped g;
  for (const auto& j : rows) {
    const auto kind = j.value("kind", "");
    if (kind == "exit_curve") {
      const auto r = read_row<ExitCurveRow>(j);
      if (!g.curve.count(r.label)) g.curve_order.push_back(r.label);
      g.curve[r.label][r.threshold].push_back(r);
    } else if (kind == "exit_calibration") {
      const auto r = read_row<ExitCalibrationRow>(j);
      g.cal[r.label][r.exit].push_back(r);
    } else if (kind == "uncertainty") {
      const auto r = read_row<UncertaintyRow>(j);
      if (!g.unc.count(r.label)) g.unc_order.push_back(r.label);
      g.unc[r.label][r.method].push_back(r);
    }
  }
  return g;
}

std::string calibration_table(const std::map<int64_t, std::vector<ExitCalibrationRow>>& cal) {
  std::string md =
      md_header({"exit", "layer", "T", "accuracy", "ECE (T=1)", "ECE (T)", "NLL (T=1)", "NLL (T)"},
                "llllllll");
  using R = ExitCalibrationRow;
  for (const auto& [j, rs] : cal)
    md += fmt::format("| {} | {} | {:.3f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", j,
                      rs.front().layer, over_seeds(rs, &R::temperature).mean,
                      over_seeds(rs, &R::accuracy).mean, over_seeds(rs, &R::ece_before).mean,
                      over_seeds(rs, &R::ece_after).mean, over_seeds(rs, &R::nll_before).mean,
                      over_seeds(rs, &R::nll_after).mean);
  // Whether depth helps at all: the last exit's accuracy minus the first's, paired by seed.
  std::map<uint64_t, double> first;
  std::vector<double> gain;
  for (const auto& r : cal.begin()->second) first[r.seed] = r.accuracy;
  std::string per_seed;
  for (const auto& r : cal.rbegin()->second) {
    if (!first.count(r.seed)) continue;
    gain.push_back(r.accuracy - first[r.seed]);
    per_seed +=
        fmt::format("{}seed {}: {:+.4f}", per_seed.empty() ? "" : ", ", r.seed, gain.back());
  }
  md += fmt::format(
      "\nTemperatures fitted on the valid split; ECE and NLL measured on the test split.\n\n"
      "Last exit − first exit, test accuracy: {} ({}).\n\n",
      fmt_ms(sample_stats(gain)), per_seed);
  return md;
}

// One task's early-exit curve, the target, and its calibration per exit.
// n_seeds: the report's seed count, which a section with another count states again.
std::string exit_section(const Grouped& g, const std::string& label, int64_t n_seeds) {
  using R = ExitCurveRow;
  const auto& c = g.curve.at(label);
  const auto& full_rows = c.rbegin()->second;  // the highest threshold (> 1): every layer
  const double n_layer = static_cast<double>(full_rows.front().n_layer);
  const double full = over_seeds(full_rows, &R::accuracy).mean;
  const bool diff = full_rows.front().has_difficulty;
  const auto n_here = static_cast<int64_t>(full_rows.size());
  std::string md =
      fmt::format("### {}\n\n{}| threshold | accuracy | mean layers | speed-up | examples/s |{}\n",
                  label, n_here == n_seeds ? "" : "This model: " + seeds_note(n_here) + "\n\n",
                  diff ? " ρ(layers, difficulty) |" : "");
  md += std::string("|---|---|---|---|---|") + (diff ? "---|" : "") + "\n";
  double best = 1.0;
  std::string best_th = "none";
  for (const auto& [th, rs] : c) {
    const auto acc = over_seeds(rs, &R::accuracy);
    const auto ml = over_seeds(rs, &R::mean_layers);
    md +=
        fmt::format("| {:.2f} | {} | {:.2f} | {:.2f}x | {:.0f} |{}\n", th, fmt_ms(acc), ml.mean,
                    n_layer / ml.mean, over_seeds(rs, &R::examples_per_s).mean,
                    diff ? fmt::format(" {:.3f} |", over_seeds(rs, &R::difficulty_rho).mean) : "");
    if (acc.mean >= full - 0.01 && n_layer / ml.mean > best) {
      best = n_layer / ml.mean;
      best_th = fmt::format("{:.2f}", th);
    }
  }
  md += fmt::format(
      "\nTarget (≥ 2x fewer layers at ≤ 1 point of accuracy lost against all layers, {:.4f}): "
      "best {:.2f}x at threshold {} — {}\n\n",
      full, best, best_th, best >= 2.0 ? "met ✓" : "not met");
  if (g.cal.count(label)) md += calibration_table(g.cal.at(label));
  return md;
}

std::string swag_section(const Grouped& g, const std::string& label, int64_t n_seeds) {
  using R = UncertaintyRow;
  const auto& u = g.unc.at(label);
  const bool ann = u.begin()->second.front().entropy_pearson.has_value();
  const auto n_here = static_cast<int64_t>(u.begin()->second.size());
  std::string md =
      fmt::format("### {}\n\n{}| method | accuracy | NLL | ECE |{}\n|---|---|---|---|{}\n", label,
                  n_here == n_seeds ? "" : "This model: " + seeds_note(n_here) + "\n\n",
                  ann ? " r(H, H_ann) | ρ(H, H_ann) | KL |" : "", ann ? "---|---|---|" : "");
  for (const std::string m : {"sgd", "swa", "swag"}) {
    if (!u.count(m)) continue;
    const auto& rs = u.at(m);
    md += fmt::format(
        "| {} | {} | {} | {} |{}\n", m, fmt_ms(over_seeds(rs, &R::accuracy)),
        fmt_ms(over_seeds(rs, &R::nll)), fmt_ms(over_seeds(rs, &R::ece)),
        ann ? fmt::format(" {} | {} | {} |", fmt_ms(over_seeds(rs, &R::entropy_pearson), 3),
                          fmt_ms(over_seeds(rs, &R::entropy_spearman), 3),
                          fmt_ms(over_seeds(rs, &R::kl_annotators)))
            : "");
  }
  return md + "\n";
}

std::string exit_plot(const Grouped& g, const std::string& plot_dir) {
  using R = ExitCurveRow;
  std::string data, cmds;
  for (size_t i = 0; i < g.curve_order.size(); ++i) {
    std::string block;
    for (const auto& [th, rs] : g.curve.at(g.curve_order[i]))
      block += fmt::format("{} {} {}\n", over_seeds(rs, &R::mean_layers).mean,
                           over_seeds(rs, &R::accuracy).mean, th);
    data += gp_block(g.curve_order[i], block);
    cmds += fmt::format("{}'exit.dat' index {} using 1:2 with linespoints title '{}'", gp_sep(i), i,
                        g.curve_order[i]);
  }
  write_file_atomic(plot_dir + "/exit.dat", data);
  return "## Plots\n\n" + svg_links(render_plot(plot_dir, "early_exit",
                                                "set title 'early exit: accuracy vs layers "
                                                "used'\nset xlabel 'mean layers run per "
                                                "example'\nset ylabel 'test accuracy'\nset key "
                                                "below\nset grid\nplot " +
                                                    cmds + "\n"),
                                    "early exit");
}

std::string exit_swag_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  const auto g = group(rows);
  // One seed count for the whole report, or 0 when the models differ (each section says its own).
  std::set<size_t> counts;
  for (const auto& [label, c] : g.curve) counts.insert(c.rbegin()->second.size());
  for (const auto& [label, u] : g.unc) counts.insert(u.begin()->second.size());
  const int64_t n_seeds = counts.size() > 1 ? 0 : count_seeds(rows);
  std::string md = (n_seeds ? seeds_note(n_seeds)
                            : std::string("The models ran different numbers of seeds; each "
                                          "section below says how many.")) +
                   "\n\n## Early exit\n\n";
  md +=
      "Each example alone (batch 1, padding trimmed), test split; the model stops at the first "
      "exit whose calibrated top probability reaches the threshold (above 1: every layer). "
      "Speed-up = layers / mean layers used. ρ = Spearman correlation of the layers used with "
      "the example's known difficulty (the tasks that know it: difficulty, pointer_chase).\n\n";
  for (const auto& label : g.curve_order) md += exit_section(g, label, n_seeds);
  md += "## SWAG\n\n";
  md +=
      "Test split. sgd = the final weights; swa = the mean of the snapshots; swag = the Bayesian "
      "model average of the samples. r / ρ = Pearson / Spearman correlation of the predictive "
      "entropy with the annotators' entropy; KL = mean KL(annotators ‖ prediction) (difficulty "
      "task only: its annotators are known).\n\n";
  for (const auto& label : g.unc_order) md += swag_section(g, label, n_seeds);
  if (plot_dir.empty() || g.curve_order.empty()) return md;
  return md + exit_plot(g, plot_dir);
}

}  // namespace

}  // namespace seqlab
