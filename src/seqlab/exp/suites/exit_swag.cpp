// Suite `exit_swag`: early exit with calibrated confidence (Schwartz et al. 2020, "The Right Tool
// for the Job") and SWAG uncertainty (Maddox et al. 2019; Talman et al. 2023) on WordNet
// supersenses, WordNet-relation NLI and a synthetic task of known difficulty and known annotator
// disagreement.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

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
      "Talman+ 2023) on supersense, pair_nli and difficulty";
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
  s.custom_report = exit_swag_report;
  return s;
}

namespace {

// Mean and sd over seeds of one field of a group of rows.
std::pair<double, double> mean_sd(const std::vector<nlohmann::json>& rs, const char* key) {
  double m = 0, v = 0;
  for (const auto& r : rs) m += r[key].get<double>();
  m /= static_cast<double>(rs.size());
  for (const auto& r : rs) v += (r[key].get<double>() - m) * (r[key].get<double>() - m);
  return {m, rs.size() > 1 ? std::sqrt(v / static_cast<double>(rs.size() - 1)) : 0.0};
}

std::string fmt_ms(const std::pair<double, double>& p, int prec = 4) {
  return p.second > 0 ? fmt::format("{:.{}f} ± {:.{}f}", p.first, prec, p.second, prec)
                      : fmt::format("{:.{}f}", p.first, prec);
}

std::string exit_swag_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  // Group by (label, threshold) / (label, exit) / (label, method), over seeds.
  std::map<std::string, std::map<double, std::vector<nlohmann::json>>> curve;
  std::map<std::string, std::map<int64_t, std::vector<nlohmann::json>>> cal;
  std::map<std::string, std::map<std::string, std::vector<nlohmann::json>>> unc;
  std::vector<std::string> curve_order, unc_order;
  for (const auto& r : rows) {
    const auto kind = r.value("kind", "");
    const auto label = r.value("label", "");
    if (kind == "exit_curve") {
      if (!curve.count(label)) curve_order.push_back(label);
      curve[label][r["threshold"].get<double>()].push_back(r);
    } else if (kind == "exit_calibration") {
      cal[label][r["exit"].get<int64_t>()].push_back(r);
    } else if (kind == "uncertainty") {
      if (!unc.count(label)) unc_order.push_back(label);
      unc[label][r["method"].get<std::string>()].push_back(r);
    }
  }
  std::string md = "## Early exit\n\n";
  md +=
      "Each example alone (batch 1, padding trimmed), test split; the model stops at the first "
      "exit whose calibrated top probability reaches the threshold (above 1: every layer). "
      "Speed-up = layers / mean layers used. ρ = Spearman correlation of the layers used with "
      "the example's known difficulty (difficulty task only).\n\n";
  for (const auto& label : curve_order) {
    const auto& c = curve[label];
    const auto& full_rows = c.rbegin()->second;  // the highest threshold (> 1): every layer
    const double n_layer = full_rows.front()["n_layer"].get<double>();
    const double full = mean_sd(full_rows, "accuracy").first;
    const bool diff = full_rows.front().value("has_difficulty", false);
    md +=
        fmt::format("### {}\n\n| threshold | accuracy | mean layers | speed-up | examples/s |{}\n",
                    label, diff ? " ρ(layers, difficulty) |" : "");
    md += std::string("|---|---|---|---|---|") + (diff ? "---|" : "") + "\n";
    double best = 1.0;
    std::string best_th = "none";
    for (const auto& [th, rs] : c) {
      auto acc = mean_sd(rs, "accuracy");
      auto ml = mean_sd(rs, "mean_layers");
      md += fmt::format("| {:.2f} | {} | {:.2f} | {:.2f}x | {:.0f} |{}\n", th, fmt_ms(acc),
                        ml.first, n_layer / ml.first, mean_sd(rs, "examples_per_s").first,
                        diff ? fmt::format(" {:.3f} |", mean_sd(rs, "difficulty_rho").first) : "");
      if (acc.first >= full - 0.01 && n_layer / ml.first > best) {
        best = n_layer / ml.first;
        best_th = fmt::format("{:.2f}", th);
      }
    }
    md += fmt::format(
        "\nTarget (≥ 2x fewer layers at ≤ 1 point of accuracy lost against all layers, {:.4f}): "
        "best {:.2f}x at threshold {} — {}\n\n",
        full, best, best_th, best >= 2.0 ? "met ✓" : "not met");
    if (cal.count(label)) {
      md += "| exit | layer | T | accuracy | ECE (T=1) | ECE (T) | NLL (T=1) | NLL (T) |\n";
      md += "|---|---|---|---|---|---|---|---|\n";
      for (const auto& [j, rs] : cal[label])
        md += fmt::format("| {} | {} | {:.3f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", j,
                          rs.front()["layer"].get<int64_t>(), mean_sd(rs, "temperature").first,
                          mean_sd(rs, "accuracy").first, mean_sd(rs, "ece_before").first,
                          mean_sd(rs, "ece_after").first, mean_sd(rs, "nll_before").first,
                          mean_sd(rs, "nll_after").first);
      md += "\nTemperatures fitted on the valid split; ECE and NLL measured on the test split.\n\n";
    }
  }
  md += "## SWAG\n\n";
  md +=
      "Test split. sgd = the final weights; swa = the mean of the snapshots; swag = the Bayesian "
      "model average of the samples. r / ρ = Pearson / Spearman correlation of the predictive "
      "entropy with the annotators' entropy; KL = mean KL(annotators ‖ prediction) (difficulty "
      "task only: its annotators are known).\n\n";
  for (const auto& label : unc_order) {
    const auto& u = unc[label];
    const bool ann = u.begin()->second.front().contains("entropy_pearson");
    md += fmt::format("### {}\n\n| method | accuracy | NLL | ECE |{}\n|---|---|---|---|{}\n", label,
                      ann ? " r(H, H_ann) | ρ(H, H_ann) | KL |" : "", ann ? "---|---|---|" : "");
    for (const std::string m : {"sgd", "swa", "swag"}) {
      if (!u.count(m)) continue;
      const auto& rs = u.at(m);
      md += fmt::format(
          "| {} | {} | {} | {} |{}\n", m, fmt_ms(mean_sd(rs, "accuracy")),
          fmt_ms(mean_sd(rs, "nll")), fmt_ms(mean_sd(rs, "ece")),
          ann ? fmt::format(" {} | {} | {} |", fmt_ms(mean_sd(rs, "entropy_pearson"), 3),
                            fmt_ms(mean_sd(rs, "entropy_spearman"), 3),
                            fmt_ms(mean_sd(rs, "kl_annotators")))
              : "");
    }
    md += "\n";
  }
  if (plot_dir.empty() || curve_order.empty()) return md;
  std::string data, cmds;
  for (size_t i = 0; i < curve_order.size(); ++i) {
    data += "# " + curve_order[i] + "\n";
    for (const auto& [th, rs] : curve[curve_order[i]])
      data += fmt::format("{} {} {}\n", mean_sd(rs, "mean_layers").first,
                          mean_sd(rs, "accuracy").first, th);
    data += "\n\n";
    cmds += fmt::format("{}'exit.dat' index {} using 1:2 with linespoints title '{}'",
                        i ? ", " : "", i, curve_order[i]);
  }
  write_file_atomic(plot_dir + "/exit.dat", data);
  md += "## Plots\n\n";
  for (const auto& img : render_plot(plot_dir, "early_exit",
                                     "set title 'early exit: accuracy vs layers used'\n"
                                     "set xlabel 'mean layers run per example'\n"
                                     "set ylabel 'test accuracy'\nset key below\nset grid\nplot " +
                                         cmds + "\n"))
    if (img.size() > 4 && img.substr(img.size() - 4) == ".svg")
      md += fmt::format("![early exit](plots/{})\n\n", img);
  return md;
}

}  // namespace

}  // namespace seqlab
