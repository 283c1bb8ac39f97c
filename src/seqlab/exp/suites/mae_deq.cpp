// Suite `mae_deq`: architectures that spend compute differently.
//
// MAE (Peng et al. 2020): a byte-level LM on WordNet glosses with multi-head attention against
// MAE trained by block coordinate descent and jointly (a small gate, so the parameter counts stay
// within a few percent); and the copy_reverse_sort mixture, where the gate's chosen expert is
// compared with the task (mutual information).
// DEQ (Bai et al. 2019): the same LM with one equilibrium block (implicit and phantom gradients)
// against the weight-tied block unrolled to the same depth and a stack of that many different
// blocks; validation perplexity, peak training memory (worker RSS, see exp/cells/mae_deq.h) and the
// solver's residual and iterations per step.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/mae_deq.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <map>

namespace seqlab {

namespace {

std::string mae_deq_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

}  // namespace

SuiteSpec mae_deq_suite(bool quick) {
  SuiteSpec s;
  s.name = "mae_deq";
  s.description =
      "Mixture of attentive experts (block coordinate descent vs joint) against multi-head "
      "attention on a byte LM and a copy/reverse/sort mixture; deep equilibrium LM (implicit / "
      "phantom gradients) against its unrolled twin and a stacked model: perplexity, peak "
      "training memory, solver residuals.";
  s.claims =
      "- Peng et al. (2020), MAE: a mixture of h experts, each multi-head attention with one head "
      "dropped, improves over the multi-head attention it is built from, on machine translation "
      "and on WikiText-103 language modelling, at about the same parameter count; training by "
      "block coordinate descent (alternating gate and expert updates) matters: trained jointly, "
      "the gate collapses and the gain shrinks (their ablation); experts specialise on "
      "different inputs.\n"
      "- Bai, Kolter and Koltun (2019), DEQ: one weight-tied layer solved to its equilibrium and "
      "trained by implicit differentiation matches deep (stacked or weight-tied) models on "
      "WikiText-103 while using far less training memory, which stays constant in the depth: "
      "up to 88% less than the explicit models it is compared with.";
  const int64_t D = quick ? 64 : 128, H = 4;
  const int64_t lm_T = quick ? 64 : 128, lm_steps = quick ? 600 : 3000;
  const int64_t mix_T = quick ? 22 : 42, mix_steps = quick ? 800 : 4000;
  const int64_t deq_T = quick ? 128 : 256, deq_steps = quick ? 300 : 2000, depth = 8;
  const nlohmann::json lm_task =
      grid_task("lm", lm_T, lm_T, {{"corpus", "wordnet"}, {"tokenizer", "byte"}});
  const nlohmann::json deq_task =
      grid_task("lm", deq_T, deq_T, {{"corpus", "wordnet"}, {"tokenizer", "byte"}});
  const nlohmann::json mix_task = grid_task("copy_reverse_sort", mix_T / 2, mix_T, {});
  auto train = [&](int64_t steps, int64_t batch, const std::string& schedule, int64_t log_every) {
    auto t = grid_train(steps, batch, 1e-3, 0);
    t["mae_schedule"] = schedule;
    t["log_every"] = log_every;
    t["eval_size"] = 64;
    t["warmup"] = std::max<int64_t>(1, steps / 20);
    return t;
  };
  auto model = [&](int64_t T, int64_t layers, const nlohmann::json& extra) {
    nlohmann::json e = {{"n_head", H}, {"mlp_ratio", 4}};
    for (auto it = extra.begin(); it != extra.end(); ++it) e[it.key()] = it.value();
    return grid_model("softmax", D, layers, T, e);
  };
  // A small gate (hidden 16): MAE's parameter count stays within ~2% of multi-head attention.
  const nlohmann::json mae = {{"mae", true}, {"mae_gate_hidden", 16}};
  struct Variant {
    std::string id, label, schedule;
    nlohmann::json extra;
  };
  const std::vector<Variant> mae_variants = {
      {"mha", "multi-head attention", "joint", nlohmann::json::object()},
      {"mae_bcd", "MAE, block coordinate descent (bcd:1,1)", "bcd:1,1", mae},
      {"mae_joint", "MAE, joint training", "joint", mae},
  };
  const nlohmann::json lm_eval = {{"context", lm_T}, {"max_tokens", 65536}};
  for (const auto& v : mae_variants)
    s.cells.push_back({{"id", "lm_" + v.id},
                       {"kind", "mae_deq"},
                       {"group", "lm"},
                       {"label", v.label},
                       {"model", model(lm_T, 2, v.extra)},
                       {"task", lm_task},
                       {"train", train(lm_steps, 16, v.schedule, 50)},
                       {"eval", lm_eval}});
  for (const auto& v : mae_variants)
    s.cells.push_back({{"id", "mix_" + v.id},
                       {"kind", "mae_deq"},
                       {"group", "mix"},
                       {"label", v.label},
                       {"model", model(mix_T, 2, v.extra)},
                       {"task", mix_task},
                       {"train", train(mix_steps, 32, v.schedule, 50)},
                       {"eval_size", 900}});
  // DEQ: the solver's threshold is the unrolled and stacked models' depth, so the equilibrium
  // model never runs more applications of its cell forward than they do.
  const nlohmann::json deq_common = {
      {"deq", true},     {"deq_solver", "anderson"},  {"deq_max_iter", depth},
      {"deq_tol", 1e-3}, {"deq_bwd_max_iter", depth}, {"deq_bwd_tol", 1e-3}};
  auto deq = [&](const std::string& backward) {
    auto e = deq_common;
    e["deq_backward"] = backward;
    if (backward == "phantom") {
      e["deq_phantom_k"] = 3;
      e["deq_phantom_damping"] = 0.5;
    }
    return e;
  };
  const std::vector<std::tuple<std::string, std::string, int64_t, nlohmann::json>> deq_cells = {
      {"deq_implicit", "DEQ, Anderson, implicit gradient", 1, deq("implicit")},
      {"deq_phantom", "DEQ, Anderson, phantom gradient (k 3, damping 0.5)", 1, deq("phantom")},
      {"deq_unroll", fmt::format("weight-tied, unrolled x{} (backprop through all)", depth), 1,
       deq("unroll")},
      {"stacked", fmt::format("stacked, {} different blocks", depth), depth,
       nlohmann::json::object()},
  };
  const nlohmann::json deq_eval = {{"context", deq_T}, {"max_tokens", 32768}};
  for (const auto& [id, label, layers, extra] : deq_cells)
    s.cells.push_back({{"id", id},
                       {"kind", "mae_deq"},
                       {"group", "deq"},
                       {"label", label},
                       {"model", model(deq_T, layers, extra)},
                       {"task", deq_task},
                       {"train", train(deq_steps, 16, "joint", 5)},
                       {"eval", deq_eval}});
  s.custom_report = mae_deq_report;
  return s;
}

namespace {

using Rows = std::vector<MaeDeqRow>;
using ByCell = std::map<std::string, MaeDeqRow>;

double or_nan(const std::optional<double>& v) {
  return v ? *v : std::nan("");
}

std::string lm_section(const Rows& lm, const ByCell& by) {
  const auto& a = lm.front();
  std::string md = fmt::format(
      "## MAE: language modelling\n\nWordNet 3.0 glosses, byte tokenizer, {} tokens per "
      "sequence, batch {}, d_model {}, {} layers, 4 heads, seed {}; valid perplexity over the "
      "first {} tokens of the valid split.\n\n",
      a.train_length, a.batch, a.d_model, a.n_layer, a.seed, a.eval_tokens.value_or(0));
  md += md_header({"model", "parameters", "steps", "train time", "valid ppl", "vs MHA"}, "lrrrrr");
  const double base = by.count("lm_mha") ? or_nan(by.at("lm_mha").ppl) : std::nan("");
  for (const auto& r : lm)
    md +=
        md_row({r.label, fmt_count(r.parameters), std::to_string(r.steps),
                fmt::format("{:.0f} s", r.train_seconds), fmt::format("{:.3f}", or_nan(r.ppl)),
                std::isnan(base) ? "" : fmt::format("{:+.2f}%", 100 * (or_nan(r.ppl) / base - 1))});
  return md;
}

// The gate's first-ranked expert per task, per layer: "- layer l: [c c c c] [..] [..]".
std::string expert_counts(const MaeDeqRow& r) {
  std::string md =
      fmt::format("\nFirst-ranked expert by task, {} (rows: copy, reverse, sort):\n\n", r.label);
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

std::string mix_section(const Rows& mix) {
  const auto& a = mix.front();
  std::string md = fmt::format(
      "\n## MAE: the copy / reverse / sort mixture\n\ncopy_reverse_sort (task token, 8 "
      "symbols), trained on lengths {}..{}, scored at {} on 900 held-out sequences; d_model {}, "
      "{} layers, 4 heads (so 4 experts), seed {}. MI = mutual information between the task and "
      "the expert the gate ranks first at the SEP token, per layer, in bits (at most log2 3 = "
      "1.585: every task its own expert; 0: the gate ignores the task).\n\n",
      a.train_length / 2, a.train_length, a.train_length, a.d_model, a.n_layer, a.seed);
  md += md_header(
      {"model", "parameters", "accuracy", "copy", "reverse", "sort", "MI layer 0", "MI layer 1"},
      "lrrrrrrr");
  for (const auto& r : mix) {
    std::string mi0, mi1;
    if (r.mi_bits) {
      mi0 = fmt::format("{:.3f}", r.mi_bits->at(0));
      if (r.mi_bits->size() > 1) mi1 = fmt::format("{:.3f}", r.mi_bits->at(1));
    }
    const auto& t = r.accuracy_by_task.value();
    md += md_row({r.label, fmt_count(r.parameters), fmt::format("{:.3f}", or_nan(r.accuracy)),
                  fmt::format("{:.3f}", t.at("copy")), fmt::format("{:.3f}", t.at("reverse")),
                  fmt::format("{:.3f}", t.at("sort")), mi0, mi1});
  }
  for (const auto& r : mix)
    if (r.experts_by_task) md += expert_counts(r);
  return md;
}

// Mean forward iterations, forward residual and backward iterations over the last quarter of the
// logged steps ("" where the row has no trace; backward "" when it never ran).
std::array<std::string, 3> solver_means(const MaeDeqRow& r) {
  std::array<std::string, 3> out;
  if (!r.deq_trace || r.deq_trace->empty()) return out;
  const auto& t = *r.deq_trace;
  const size_t from = t.size() * 3 / 4;
  double si = 0, sr = 0, sb = 0;
  for (size_t i = from; i < t.size(); ++i) {
    si += static_cast<double>(t[i].iters);
    sr += t[i].residual;
    sb += static_cast<double>(t[i].bwd_iters);
  }
  const double n = static_cast<double>(t.size() - from);
  out[0] = fmt::format("{:.1f}", si / n);
  out[1] = fmt::format("{:.2e}", sr / n);
  if (sb > 0) out[2] = fmt::format("{:.1f}", sb / n);
  return out;
}

std::string deq_section(const Rows& deq, const ByCell& by) {
  const auto& a = deq.front();
  std::string md = fmt::format(
      "\n## DEQ: perplexity and peak training memory\n\nWordNet bytes, {} tokens per sequence, "
      "batch {}, d_model {}, 4 heads, seed {}, one worker process per model, one thread. Depth "
      "= applications of the cell (DEQ: the solver's threshold) or blocks. Memory: "
      "getrusage(RUSAGE_SELF).ru_maxrss of the model's own worker process, before training "
      "(LibTorch, binary: \"start\") and after it (\"peak\"); \"training\" is peak - start, "
      "what training added at its peak (the autograd graph's saved tensors, solver history, "
      "optimizer state, the corpus). \"step\" isolates what one training step (forward, loss, "
      "backward at the training batch and length, on the trained model) adds: the rise of the "
      "resident high-water mark (VmHWM, reset through /proc/self/clear_refs) over VmRSS just "
      "before the step, gradients already allocated, malloc's mmap threshold fixed at 64 KiB so "
      "freed tensors are returned; the minimum of three steps. Iterations and residuals are the "
      "mean over the last quarter of the logged steps.\n\n",
      a.train_length, a.batch, a.d_model, a.seed);
  md += md_header(
      {"model", "depth", "parameters", "train time", "valid ppl", "start", "peak", "training",
       "vs unrolled", "step", "vs unrolled", "fwd iters", "fwd residual", "bwd iters"},
      "lrrrrrrrrrrrrr");
  const bool have_unrolled = by.count("deq_unroll") > 0;
  const double unrolled = have_unrolled ? by.at("deq_unroll").train_mem_mb : std::nan("");
  const double unrolled_step =
      have_unrolled ? or_nan(by.at("deq_unroll").step_mem_mb) : std::nan("");
  for (const auto& r : deq) {
    const auto [fi, fr, bi] = solver_means(r);
    const double mem = r.train_mem_mb, step = or_nan(r.step_mem_mb);
    const bool is_unrolled = r.cell == "deq_unroll";
    md += md_row({r.label, std::to_string(r.depth), fmt_count(r.parameters),
                  fmt::format("{:.0f} s", r.train_seconds), fmt::format("{:.3f}", or_nan(r.ppl)),
                  fmt::format("{:.0f} MB", r.rss_start_mb), fmt::format("{:.0f} MB", r.rss_peak_mb),
                  fmt::format("{:.0f} MB", mem),
                  std::isnan(unrolled) || is_unrolled
                      ? std::string("")
                      : fmt::format("{:+.0f}%", 100 * (mem / unrolled - 1)),
                  std::isnan(step) ? std::string("") : fmt::format("{:.1f} MB", step),
                  std::isnan(unrolled_step) || std::isnan(step) || is_unrolled
                      ? std::string("")
                      : fmt::format("{:+.0f}%", 100 * (step / unrolled_step - 1)),
                  fi, fr, bi});
  }
  return md;
}

// The DEQ's memory against its unrolled twin, per step and over the whole run.
std::string deq_targets(const ByCell& by) {
  const auto& imp = by.at("deq_implicit");
  const auto& unr = by.at("deq_unroll");
  std::string md;
  const double d = imp.train_mem_mb, u = unr.train_mem_mb;
  const double cut = 100 * (1 - d / u);
  const double ds = or_nan(imp.step_mem_mb), us = or_nan(unr.step_mem_mb);
  if (!std::isnan(ds) && !std::isnan(us) && ds >= 0 && us > 0) {
    const double step_cut = 100 * (1 - ds / us);
    md += fmt::format(
        "- DEQ (implicit) memory of one training step at least 60% below the unrolled model of "
        "equal depth: {} ({:.1f} MB vs {:.1f} MB: {:.0f}% lower).\n",
        step_cut >= 60 ? "**met**" : "**missed**", ds, us, step_cut);
  }
  md += fmt::format(
      "- Whole training run (process peaks, corpus and optimizer included), the same "
      "comparison: {} ({:.0f} MB vs {:.0f} MB added by training: {:.0f}% lower; whole-process "
      "peaks "
      "{:.0f} vs {:.0f} MB, {:.0f}% lower).\n",
      cut >= 60 ? "**met**" : "**missed**", d, u, cut, imp.rss_peak_mb, unr.rss_peak_mb,
      100 * (1 - imp.rss_peak_mb / unr.rss_peak_mb));
  return md;
}

std::string targets(const ByCell& by) {
  std::string md = "\n## Targets\n\n";
  auto ppl = [&](const std::string& id) {
    return by.count(id) ? or_nan(by.at(id).ppl) : std::nan("");
  };
  if (!std::isnan(ppl("lm_mha")) && !std::isnan(ppl("lm_mae_bcd")))
    md += fmt::format(
        "- MAE (BCD) beats multi-head attention on LM perplexity: {} ({:.3f} vs {:.3f}).\n",
        ppl("lm_mae_bcd") < ppl("lm_mha") ? "**yes**" : "**no**", ppl("lm_mae_bcd"), ppl("lm_mha"));
  if (!std::isnan(ppl("lm_mae_joint")) && !std::isnan(ppl("lm_mae_bcd")))
    md += fmt::format("- BCD beats joint training (LM): {} ({:.3f} vs {:.3f}).\n",
                      ppl("lm_mae_bcd") < ppl("lm_mae_joint") ? "**yes**" : "**no**",
                      ppl("lm_mae_bcd"), ppl("lm_mae_joint"));
  for (const char* id : {"mix_mae_bcd", "mix_mae_joint"})
    if (by.count(id) && by.at(id).mi_bits) {
      double best = 0;
      for (double v : *by.at(id).mi_bits) best = std::max(best, v);
      md += fmt::format(
          "- Experts specialise by task ({}): highest per-layer MI {:.3f} bits of "
          "1.585 ({}).\n",
          by.at(id).label, best,
          best >= 0.5   ? "**yes**, clearly"
          : best >= 0.1 ? "**weakly**"
                        : "**no**");
    }
  if (by.count("deq_implicit") && by.count("deq_unroll")) {
    md += deq_targets(by);
    md += fmt::format("- DEQ perplexity against unrolled / stacked: {:.3f} vs {:.3f} / {:.3f}.\n",
                      ppl("deq_implicit"), ppl("deq_unroll"), ppl("stacked"));
  }
  return md;
}

// The solver's residual and iterations per logged step, one line per DEQ.
std::string deq_plots(const Rows& deq, const std::string& plot_dir) {
  std::string data, res_cmd, it_cmd;
  size_t idx = 0;
  for (const auto& r : deq) {
    if (!r.deq_trace || r.deq_trace->empty()) continue;
    std::string block;
    for (const auto& p : *r.deq_trace)
      block += fmt::format("{} {} {} {} {}\n", p.step, static_cast<double>(p.iters), p.residual,
                           static_cast<double>(p.bwd_iters), p.bwd_residual);
    data += gp_block(r.label, block);
    const auto& l = r.label;
    res_cmd +=
        fmt::format("{}'deq.dat' index {} using 1:3 with lines title '{}'", gp_sep(idx), idx, l);
    it_cmd += fmt::format("{}'deq.dat' index {} using 1:2 with lines title '{} (forward)'",
                          gp_sep(idx), idx, l);
    if (r.deq == "implicit")
      it_cmd +=
          fmt::format(", 'deq.dat' index {} using 1:4 with lines title '{} (backward)'", idx, l);
    ++idx;
  }
  if (!idx) return "";
  std::string md = "\n## Plots\n\n";
  write_file_atomic(plot_dir + "/deq.dat", data);
  md += svg_links(render_plot(plot_dir, "deq_residual",
                              "set title 'DEQ: relative residual of the forward solve, per "
                              "training step'\nset xlabel 'step'\nset ylabel '|f(z)-z| / "
                              "|f(z)|'\nset logscale y\nset key below\nset grid\nplot " +
                                  res_cmd + "\n"),
                  "residual per step");
  md += svg_links(render_plot(plot_dir, "deq_iterations",
                              "set title 'DEQ: solver iterations per training step'\nset xlabel "
                              "'step'\nset ylabel 'evaluations of f'\nset key below\nset "
                              "grid\nplot " +
                                  it_cmd + "\n"),
                  "iterations per step");
  return md;
}

std::string mae_deq_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  ByCell by;
  Rows lm, mix, deq;
  for (const auto& j : rows) {
    auto r = read_row<MaeDeqRow>(j);
    by[r.cell] = r;
    (r.group == "lm" ? lm : r.group == "mix" ? mix : deq).push_back(std::move(r));
  }
  std::string md;
  if (!lm.empty()) md += lm_section(lm, by);
  if (!mix.empty()) md += mix_section(mix);
  if (!deq.empty()) md += deq_section(deq, by);
  md += targets(by);
  md += "\n" + seeds_note(count_seeds(rows)) + "\n";
  if (plot_dir.empty()) return md;
  return md + deq_plots(deq, plot_dir);
}

}  // namespace

}  // namespace seqlab
