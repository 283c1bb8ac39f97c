// The report of suite `mae_deq` (exp/suites/mae_deq.cpp): every cell's rows grouped over seeds
// (ids <name>_s<seed>), mean ± sd with 95% t intervals per table cell, Welch intervals for the
// differences the claims rest on, the DEQ's memory and solver, and plots.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/mae_deq.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>

namespace seqlab {

namespace {

using Rows = std::vector<MaeDeqRow>;

// One cell over its seeds: rows in seed order, named by the id without "_s<seed>".
struct Group {
  std::string id, label;
  Rows rows;
};
using Groups = std::vector<Group>;
using Metric = std::function<std::optional<double>(const MaeDeqRow&)>;

std::vector<double> values(const Group& g, const Metric& f) {
  std::vector<double> v;
  for (const auto& r : g.rows)
    if (auto x = f(r); x && std::isfinite(*x)) v.push_back(*x);
  return v;
}

SampleStats stats_of(const Group& g, const Metric& f) {
  return sample_stats(values(g, f));
}

// "mean ± sd" (or the one value) at `digits` decimals; "" without values.
std::string ms(const SampleStats& s, int digits) {
  if (s.n == 0) return "";
  if (s.n == 1) return fmt::format("{:.{}f}", s.mean, digits);
  return fmt::format("{:.{}f} ± {:.{}f}", s.mean, digits, s.sd, digits);
}

const Group* find(const Groups& gs, const std::string& id) {
  for (const auto& g : gs)
    if (g.id == id) return &g;
  return nullptr;
}

const Metric kPpl = [](const MaeDeqRow& r) { return r.ppl; };
const Metric kAcc = [](const MaeDeqRow& r) { return r.accuracy; };
const Metric kTrainMem = [](const MaeDeqRow& r) { return std::optional<double>(r.train_mem_mb); };
const Metric kStepMem = [](const MaeDeqRow& r) { return r.step_mem_mb; };
const Metric kSeconds = [](const MaeDeqRow& r) { return std::optional<double>(r.train_seconds); };

// "- what: a − b +x [lo, hi], Welch 95%, ..." for a metric of two groups ("" if either is missing).
std::string difference_line(const Groups& gs, const std::string& a, const std::string& b,
                            const Metric& f, const std::string& what, int digits) {
  const auto *ga = find(gs, a), *gb = find(gs, b);
  if (!ga || !gb) return "";
  return fmt::format("- {} ({} − {}): {}\n", what, ga->label, gb->label,
                     fmt_difference(welch_difference(values(*ga, f), values(*gb, f)), digits));
}

std::string lm_section(const Groups& lm) {
  const auto& a = lm.front().rows.front();
  std::string md = fmt::format(
      "## MAE: language modelling\n\nWordNet 3.0 glosses, byte tokenizer, {} tokens per "
      "sequence, batch {}, d_model {}, {} layers, 4 heads; valid perplexity over the first {} "
      "tokens of the valid split; mean ± sd over seeds, [95% t interval].\n\n",
      a.train_length, a.batch, a.d_model, a.n_layer, a.eval_tokens.value_or(0));
  md += md_header({"model", "parameters", "steps", "train time", "valid ppl", "vs MHA"}, "lrrrrr");
  const auto* base = find(lm, "lm_mha");
  const double b = base ? stats_of(*base, kPpl).mean : std::nan("");
  for (const auto& g : lm) {
    const auto p = stats_of(g, kPpl);
    md +=
        md_row({g.label, fmt_count(g.rows.front().parameters), std::to_string(g.rows.front().steps),
                fmt::format("{:.0f} s", stats_of(g, kSeconds).mean), fmt_mean_sd_ci(p, 3),
                std::isnan(b) ? "" : fmt::format("{:+.2f}%", 100 * (p.mean / b - 1))});
  }
  md += "\n";
  md += difference_line(lm, "lm_mae_bcd", "lm_mha", kPpl, "valid ppl", 3);
  md += difference_line(lm, "lm_mae_joint", "lm_mha", kPpl, "valid ppl", 3);
  md += difference_line(lm, "lm_mae_bcd", "lm_mae_joint", kPpl, "valid ppl", 3);
  return md;
}

// The gate's first-ranked expert per task, per layer, of one row (seed 0's).
std::string expert_counts(const MaeDeqRow& r) {
  std::string md =
      fmt::format("\nFirst-ranked expert by task, {}, seed {} (rows: copy, reverse, sort):\n\n",
                  r.label, r.seed);
  const auto& layers = *r.experts_by_task;
  for (size_t l = 0; l < layers.size(); ++l) {
    md += fmt::format("- layer {}:", l);
    for (const auto& row : layers[l]) {
      md += " [";
      for (size_t e = 0; e < row.size(); ++e) md += fmt::format("{}{:.0f}", e ? " " : "", row[e]);
      md += "]";
    }
    md += "\n";
  }
  return md;
}

Metric task_accuracy(const std::string& t) {
  return [t](const MaeDeqRow& r) -> std::optional<double> {
    if (!r.accuracy_by_task || !r.accuracy_by_task->count(t)) return std::nullopt;
    return r.accuracy_by_task->at(t);
  };
}

Metric mi_layer(size_t l) {
  return [l](const MaeDeqRow& r) -> std::optional<double> {
    if (!r.mi_bits || r.mi_bits->size() <= l) return std::nullopt;
    return r.mi_bits->at(l);
  };
}

std::string mix_section(const Groups& mix) {
  const auto& a = mix.front().rows.front();
  std::string md = fmt::format(
      "\n## MAE: the copy / reverse / sort mixture\n\ncopy_reverse_sort (task token, 8 "
      "symbols), trained on lengths {}..{}, scored at {} on 900 held-out sequences; d_model {}, "
      "{} layers, 4 heads (so 4 experts). MI = mutual information between the task and the expert "
      "the gate ranks first at the SEP token, per layer, in bits (at most log2 3 = 1.585: every "
      "task its own expert; 0: the gate ignores the task). Mean ± sd over seeds.\n\n",
      a.train_length / 2, a.train_length, a.train_length, a.d_model, a.n_layer);
  md += md_header(
      {"model", "parameters", "accuracy", "copy", "reverse", "sort", "MI layer 0", "MI layer 1"},
      "lrrrrrrr");
  for (const auto& g : mix)
    md += md_row({g.label, fmt_count(g.rows.front().parameters), ms(stats_of(g, kAcc), 3),
                  ms(stats_of(g, task_accuracy("copy")), 3),
                  ms(stats_of(g, task_accuracy("reverse")), 3),
                  ms(stats_of(g, task_accuracy("sort")), 3), ms(stats_of(g, mi_layer(0)), 3),
                  ms(stats_of(g, mi_layer(1)), 3)});
  md += "\n";
  md += difference_line(mix, "mix_mae_bcd", "mix_mha", kAcc, "accuracy", 3);
  md += difference_line(mix, "mix_mae_joint", "mix_mha", kAcc, "accuracy", 3);
  for (const auto& g : mix)
    if (g.rows.front().experts_by_task) md += expert_counts(g.rows.front());
  return md;
}

// Over the last quarter of a row's logged training steps: mean forward iterations, residual,
// backward iterations, and the fraction of steps whose forward solve reached the tolerance.
struct SolverSummary {
  double iters = 0, residual = 0, bwd_iters = 0, converged = 0;
};
std::optional<SolverSummary> solver_summary(const MaeDeqRow& r) {
  if (!r.deq_trace || r.deq_trace->empty() || r.deq == "unroll") return std::nullopt;
  const auto& t = *r.deq_trace;
  const size_t from = t.size() * 3 / 4;
  SolverSummary s;
  for (size_t i = from; i < t.size(); ++i) {
    s.iters += static_cast<double>(t[i].iters);
    s.residual += t[i].residual;
    s.bwd_iters += static_cast<double>(t[i].bwd_iters);
    s.converged += t[i].residual <= r.deq_tol ? 1.0 : 0.0;
  }
  const double n = static_cast<double>(t.size() - from);
  s.iters /= n;
  s.residual /= n;
  s.bwd_iters /= n;
  s.converged /= n;
  return s;
}

Metric solver_field(double SolverSummary::*f) {
  return [f](const MaeDeqRow& r) -> std::optional<double> {
    auto s = solver_summary(r);
    if (!s) return std::nullopt;
    return (*s).*f;
  };
}

// Evaluations of f the trained model's validation solve needed to reach its training tolerance;
// kDeqConvergenceIters + 1 when it never did.
const Metric kEvalsToTol = [](const MaeDeqRow& r) -> std::optional<double> {
  if (!r.deq_convergence || r.deq_convergence->empty()) return std::nullopt;
  const auto& c = *r.deq_convergence;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] <= r.deq_tol) return static_cast<double>(i + 1);
  return static_cast<double>(kDeqConvergenceIters + 1);
};

Metric residual_after(size_t k) {
  return [k](const MaeDeqRow& r) -> std::optional<double> {
    if (!r.deq_convergence || r.deq_convergence->size() < k) return std::nullopt;
    return r.deq_convergence->at(k - 1);
  };
}

std::string pct_vs(double x, double base) {
  return std::isnan(base) || std::isnan(x) ? "" : fmt::format("{:+.0f}%", 100 * (x / base - 1));
}

std::string deq_memory_table(const Groups& deq) {
  std::string md = md_header({"model", "depth", "parameters", "train time", "valid ppl", "training",
                              "vs unrolled", "step", "vs unrolled"},
                             "lrrrrrrrr");
  const auto* unr = find(deq, "deq_unroll");
  const double u = unr ? stats_of(*unr, kTrainMem).mean : std::nan("");
  const double us = unr ? stats_of(*unr, kStepMem).mean : std::nan("");
  for (const auto& g : deq) {
    const bool is_u = g.id == "deq_unroll";
    const auto mem = stats_of(g, kTrainMem), step = stats_of(g, kStepMem);
    md += md_row(
        {g.label, std::to_string(g.rows.front().depth), fmt_count(g.rows.front().parameters),
         fmt::format("{:.0f} s", stats_of(g, kSeconds).mean), fmt_mean_sd_ci(stats_of(g, kPpl), 3),
         ms(mem, 0) + " MB", is_u ? "" : pct_vs(mem.mean, u), step.n ? ms(step, 1) + " MB" : "",
         is_u ? "" : pct_vs(step.mean, us)});
  }
  return md;
}

std::string deq_solver_table(const Groups& deq) {
  std::string md = fmt::format(
      "\nThe solver. Training: mean over the last quarter of the logged steps of the forward "
      "evaluations of f, the relative residual reached, the adjoint evaluations, and the share of "
      "steps that reached the tolerance before the threshold. After training: the forward solve "
      "on the first 16 validation windows run to {} evaluations whatever the residual; "
      "\"evaluations to tol\" is the first that reached the training tolerance ({} = never).\n\n",
      kDeqConvergenceIters, kDeqConvergenceIters + 1);
  md += md_header({"model", "fwd iters", "fwd residual", "converged steps", "bwd iters",
                   "evaluations to tol", "residual at 8", "residual at 40"},
                  "lrrrrrrr");
  for (const auto& g : deq) {
    const auto res8 = stats_of(g, residual_after(8)), res40 = stats_of(g, residual_after(40));
    const auto conv = stats_of(g, solver_field(&SolverSummary::converged));
    const auto res = stats_of(g, solver_field(&SolverSummary::residual));
    md += md_row({g.label, ms(stats_of(g, solver_field(&SolverSummary::iters)), 1),
                  res.n ? fmt::format("{:.2e}", res.mean) : "",
                  conv.n ? fmt::format("{:.0f}%", 100 * conv.mean) : "",
                  ms(stats_of(g, solver_field(&SolverSummary::bwd_iters)), 1),
                  ms(stats_of(g, kEvalsToTol), 1), res8.n ? fmt::format("{:.2e}", res8.mean) : "",
                  res40.n ? fmt::format("{:.2e}", res40.mean) : ""});
  }
  md += "\n";
  md += difference_line(deq, "deq_jacreg", "deq_implicit", kEvalsToTol,
                        "evaluations to reach the tolerance after training", 1);
  md += difference_line(deq, "deq_jacreg", "deq_implicit", solver_field(&SolverSummary::iters),
                        "forward iterations, last quarter of training", 2);
  md += difference_line(deq, "deq_jacreg", "deq_implicit", kPpl, "valid ppl", 3);
  return md;
}

std::string deq_section(const Groups& deq) {
  const auto& a = deq.front().rows.front();
  std::string md = fmt::format(
      "\n## DEQ: perplexity, peak training memory, the solver\n\nWordNet bytes, {} tokens per "
      "sequence, batch {}, d_model {}, 4 heads, one worker process per model, one thread. Depth "
      "= applications of the cell (DEQ: the solver's threshold) or blocks. \"training\": "
      "the resident high-water mark of the model's own worker after training minus before it "
      "(what training added at its peak: autograd graph, solver history, optimizer state, the "
      "corpus). \"step\": what one training step (forward, loss, backward at the training batch "
      "and length, on the trained model) adds: the rise of the resident high-water mark (VmHWM, "
      "reset through /proc/self/clear_refs) over VmRSS just before the step, gradients already "
      "allocated, malloc's mmap threshold fixed at 64 KiB so freed tensors are returned; the "
      "minimum of three steps. Mean ± sd over seeds.\n\n",
      a.train_length, a.batch, a.d_model);
  md += deq_memory_table(deq);
  md += "\n";
  md += difference_line(deq, "deq_implicit", "deq_unroll", kPpl, "valid ppl", 3);
  md += difference_line(deq, "deq_implicit", "stacked", kPpl, "valid ppl", 3);
  md += difference_line(deq, "deq_implicit", "deq_unroll", kStepMem, "one training step, MB", 1);
  return md + deq_solver_table(deq);
}

// The claims' verdicts, on means over seeds (the intervals are in the sections above).
std::string targets(const Groups& lm, const Groups& mix, const Groups& deq) {
  std::string md = "\n## Targets\n\n";
  auto mean = [](const Groups& gs, const std::string& id, const Metric& f) {
    const auto* g = find(gs, id);
    return g ? stats_of(*g, f).mean : std::nan("");
  };
  const double mha = mean(lm, "lm_mha", kPpl), bcd = mean(lm, "lm_mae_bcd", kPpl),
               joint = mean(lm, "lm_mae_joint", kPpl);
  if (!std::isnan(mha) && !std::isnan(bcd))
    md += fmt::format(
        "- MAE (BCD) beats multi-head attention on LM perplexity: {} ({:.3f} vs "
        "{:.3f}).\n",
        bcd < mha ? "**yes**" : "**no**", bcd, mha);
  if (!std::isnan(joint) && !std::isnan(bcd))
    md += fmt::format("- BCD beats joint training (LM): {} ({:.3f} vs {:.3f}).\n",
                      bcd < joint ? "**yes**" : "**no**", bcd, joint);
  for (const char* id : {"mix_mae_bcd", "mix_mae_joint"}) {
    const auto* g = find(mix, id);
    if (!g) continue;
    const double best = std::max(stats_of(*g, mi_layer(0)).mean, stats_of(*g, mi_layer(1)).mean);
    md += fmt::format(
        "- Experts specialise by task ({}): highest per-layer MI {:.3f} bits of 1.585, mean over "
        "seeds ({}).\n",
        g->label, best,
        best >= 0.5   ? "**yes**, clearly"
        : best >= 0.1 ? "**weakly**"
                      : "**no**");
  }
  const double ds = mean(deq, "deq_implicit", kStepMem), us = mean(deq, "deq_unroll", kStepMem);
  if (!std::isnan(ds) && !std::isnan(us) && us > 0)
    md += fmt::format(
        "- DEQ (implicit) memory of one training step at least 60% below the unrolled model of "
        "equal depth: {} ({:.1f} MB vs {:.1f} MB: {:.0f}% lower).\n",
        100 * (1 - ds / us) >= 60 ? "**met**" : "**missed**", ds, us, 100 * (1 - ds / us));
  const double dm = mean(deq, "deq_implicit", kTrainMem), um = mean(deq, "deq_unroll", kTrainMem);
  if (!std::isnan(dm) && !std::isnan(um) && um > 0)
    md += fmt::format(
        "- Whole training run (what training added to the process peak, corpus and optimizer "
        "included), the same comparison: {} ({:.0f} MB vs {:.0f} MB: {:.0f}% lower).\n",
        100 * (1 - dm / um) >= 60 ? "**met**" : "**missed**", dm, um, 100 * (1 - dm / um));
  if (const auto* g = find(deq, "deq_implicit"))
    md += fmt::format("- DEQ perplexity against unrolled / stacked: {:.3f} vs {:.3f} / {:.3f}.\n",
                      stats_of(*g, kPpl).mean, mean(deq, "deq_unroll", kPpl),
                      mean(deq, "stacked", kPpl));
  for (const char* id : {"deq_implicit", "deq_jacreg"}) {
    const auto* g = find(deq, id);
    if (!g) continue;
    const double conv = stats_of(*g, solver_field(&SolverSummary::converged)).mean;
    const double evals = stats_of(*g, kEvalsToTol).mean;
    const auto depth = static_cast<double>(g->rows.front().depth);
    md += fmt::format(
        "- The solver converges before its threshold of {:.0f} ({}): {} ({:.0f}% of the last "
        "quarter's training steps reached the tolerance; after training, {:.1f} evaluations to "
        "reach it on validation windows).\n",
        depth, g->label, conv >= 0.5 && evals <= depth ? "**yes**" : "**no**", 100 * conv, evals);
  }
  return md;
}

// The lowest seed's row of each group that has a training trace.
std::vector<const MaeDeqRow*> traced(const Groups& deq) {
  std::vector<const MaeDeqRow*> out;
  for (const auto& g : deq)
    if (g.rows.front().deq_trace && !g.rows.front().deq_trace->empty())
      out.push_back(&g.rows.front());
  return out;
}

// Residual after each evaluation of f after training, the geometric mean over seeds per group.
std::string convergence_plot(const Groups& deq, const std::string& plot_dir) {
  std::string data, cmd;
  size_t idx = 0;
  double tol = 0;
  for (const auto& g : deq) {
    std::string block;
    for (size_t k = 1; k <= static_cast<size_t>(kDeqConvergenceIters); ++k) {
      const auto v = values(g, residual_after(k));
      if (v.empty()) break;
      double lsum = 0;
      for (double x : v) lsum += std::log(std::max(x, 1e-30));
      block += fmt::format("{} {}\n", k, std::exp(lsum / static_cast<double>(v.size())));
    }
    if (block.empty()) continue;
    tol = g.rows.front().deq_tol;
    data += gp_block(g.label, block);
    cmd += fmt::format("{}'deq_convergence.dat' index {} using 1:2 with linespoints title '{}'",
                       gp_sep(idx), idx, g.label);
    ++idx;
  }
  if (!idx) return "";
  write_file_atomic(plot_dir + "/deq_convergence.dat", data);
  return svg_links(
      render_plot(plot_dir, "deq_convergence",
                  fmt::format("set title 'DEQ after training: residual of the forward solve per "
                              "evaluation of f (validation, geometric mean over seeds)'\nset "
                              "xlabel 'evaluations of f'\nset ylabel '|f(z)-z| / |f(z)|'\nset "
                              "logscale y\nset key below\nset grid\nplot {}, {} with lines dt 2 "
                              "lc rgb 'black' title 'training tolerance'\n",
                              cmd, tol)),
      "convergence after training");
}

// The training traces of the lowest seed: residual and iterations per logged step.
std::string deq_plots(const Groups& deq, const std::string& plot_dir) {
  std::string data, res_cmd, it_cmd;
  size_t idx = 0;
  for (const auto* r : traced(deq)) {
    std::string block;
    for (const auto& p : *r->deq_trace)
      block += fmt::format("{} {} {} {} {}\n", p.step, static_cast<double>(p.iters), p.residual,
                           static_cast<double>(p.bwd_iters), p.bwd_residual);
    data += gp_block(r->label, block);
    const auto& l = r->label;
    res_cmd +=
        fmt::format("{}'deq.dat' index {} using 1:3 with lines title '{}'", gp_sep(idx), idx, l);
    it_cmd += fmt::format("{}'deq.dat' index {} using 1:2 with lines title '{} (forward)'",
                          gp_sep(idx), idx, l);
    if (r->deq == "implicit")
      it_cmd +=
          fmt::format(", 'deq.dat' index {} using 1:4 with lines title '{} (backward)'", idx, l);
    ++idx;
  }
  std::string md = "\n## Plots\n\n";
  if (idx) {
    write_file_atomic(plot_dir + "/deq.dat", data);
    md += svg_links(render_plot(plot_dir, "deq_residual",
                                "set title 'DEQ: relative residual of the forward solve, per "
                                "training step (seed 0)'\nset xlabel 'step'\nset ylabel "
                                "'|f(z)-z| / |f(z)|'\nset logscale y\nset key below\nset "
                                "grid\nplot " +
                                    res_cmd + "\n"),
                    "residual per step");
    md += svg_links(render_plot(plot_dir, "deq_iterations",
                                "set title 'DEQ: solver iterations per training step (seed "
                                "0)'\nset xlabel 'step'\nset ylabel 'evaluations of f'\nset key "
                                "below\nset grid\nplot " +
                                    it_cmd + "\n"),
                    "iterations per step");
  }
  return md + convergence_plot(deq, plot_dir);
}

}  // namespace

std::string mae_deq_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  Groups lm, mix, deq;
  static const std::regex seed_suffix("_s[0-9]+$");
  for (const auto& j : rows) {
    auto r = read_row<MaeDeqRow>(j);
    auto& gs = r.group == "lm" ? lm : r.group == "mix" ? mix : deq;
    const auto id = std::regex_replace(r.cell, seed_suffix, "");
    Group* g = nullptr;
    for (auto& x : gs)
      if (x.id == id) g = &x;
    if (!g) g = &gs.emplace_back(Group{id, r.label, {}});
    g->rows.push_back(std::move(r));
  }
  for (auto* gs : {&lm, &mix, &deq})
    for (auto& g : *gs)
      std::sort(g.rows.begin(), g.rows.end(),
                [](const MaeDeqRow& x, const MaeDeqRow& y) { return x.seed < y.seed; });
  std::string md;
  if (!lm.empty()) md += lm_section(lm);
  if (!mix.empty()) md += mix_section(mix);
  if (!deq.empty()) md += deq_section(deq);
  md += targets(lm, mix, deq);
  md += "\n" + seeds_note(count_seeds(rows)) + "\n";
  if (plot_dir.empty()) return md;
  return md + deq_plots(deq, plot_dir);
}

}  // namespace seqlab
