// The report of suite tied_lora (exp/suites/tied_lora.cpp): per configuration, its trainable
// parameters against LoRA's, valid and test perplexity over seeds, the share of LoRA's improvement
// over the converted model it keeps, and its test perplexity against LoRA paired by seed; then
// the seed-0 learning-rate check and a plot of perplexity against trainable parameters.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace seqlab {

namespace {

struct Config {
  std::string method, label, init, share, train;
  int64_t trainable = 0;
  std::map<uint64_t, LmRow> valid, test;  // by seed
};

struct Grid {
  std::vector<std::string> order;  // methods, first-seen order
  std::map<std::string, Config> by;
  std::map<uint64_t, double> converted;  // valid ppl of the converted model before finetuning
};

Grid read_grid(const std::vector<nlohmann::json>& rows) {
  Grid g;
  for (const auto& j : rows) {
    const auto r = read_row<LmRow>(j);
    const auto m = r.method.empty() ? r.cell : r.method;
    if (!g.by.count(m)) g.order.push_back(m);
    auto& c = g.by[m];
    c.method = m, c.label = r.label, c.init = r.init, c.trainable = r.trainable;
    c.share = r.adapter == "lora" ? "(per layer)" : r.adapter_share.value_or("");
    c.train = r.adapter == "none" ? "all weights" : r.adapter_train.value_or("A,B");
    (r.split == "test" ? c.test : c.valid)[r.seed] = r;
    if (r.ppl_converted && r.split == "valid") g.converted[r.seed] = *r.ppl_converted;
  }
  return g;
}

bool is_lr_check(const std::string& method) {
  return method.find("_lr") != std::string::npos;
}

std::vector<double> ppls(const std::map<uint64_t, LmRow>& rows) {
  std::vector<double> v;
  for (const auto& [seed, r] : rows) v.push_back(r.ppl);
  return v;
}

// Per seed where both finished: 100 (a / b - 1) of the test perplexities.
SampleStats paired_gap(const Config& a, const Config& b) {
  std::vector<double> v;
  for (const auto& [seed, r] : a.test)
    if (b.test.count(seed)) v.push_back(100 * (r.ppl / b.test.at(seed).ppl - 1));
  return sample_stats(v);
}

// Per seed: (converted - config) / (converted - LoRA) on valid, in %: how much of LoRA's
// improvement over the converted starting point the configuration keeps.
SampleStats kept_of_lora(const Config& c, const Config& lora, const Grid& g) {
  std::vector<double> v;
  for (const auto& [seed, r] : c.valid) {
    if (!lora.valid.count(seed) || !g.converted.count(seed)) continue;
    const double start = g.converted.at(seed), gain = start - lora.valid.at(seed).ppl;
    if (gain > 0) v.push_back(100 * (start - r.ppl) / gain);
  }
  return sample_stats(v);
}

std::string pct_cell(const SampleStats& s, bool sign) {
  if (!s.n) return "";
  const auto m = fmt::format(sign ? "{:+.1f}%" : "{:.0f}%", s.mean);
  if (s.n == 1) return m + " (n=1)";
  return fmt::format("{} ± {:.1f} {}", m, s.sd, fmt_interval(mean_interval(s), 1, sign));
}

std::string main_table(const Grid& g, const Config* lora) {
  std::string md =
      md_header({"configuration", "shared", "trained", "trainable", "of LoRA's", "seeds",
                 "valid ppl", "test ppl", "LoRA's gain kept (valid)", "test vs LoRA (paired)"},
                "lllrrrrrrr");
  for (const auto& name : g.order) {
    const auto& c = g.by.at(name);
    if (is_lr_check(name) || c.valid.empty()) continue;
    const bool adapter = c.valid.begin()->second.adapter != "none";
    md += md_row(
        {c.label, adapter ? c.share : "", adapter ? c.train : "", fmt_count(c.trainable),
         lora && adapter ? fmt::format("{:.1f}%", 100.0 * c.trainable / lora->trainable) : "",
         std::to_string(c.valid.size()), fmt_mean_sd_ci(sample_stats(ppls(c.valid)), 3),
         fmt_mean_sd_ci(sample_stats(ppls(c.test)), 3),
         lora && c.init == "converted" ? pct_cell(kept_of_lora(c, *lora, g), false) : "",
         lora && &c != lora ? pct_cell(paired_gap(c, *lora), true) : ""});
  }
  return md;
}

// Seed 0 at every learning rate: valid perplexity, and the rate valid picks.
std::string lr_table(const Grid& g) {
  std::map<std::string, std::map<std::string, double>> by;  // base method -> lr tag -> ppl
  std::vector<std::string> bases, tags = {"1e-3", "3e-3", "1e-2"};
  for (const auto& name : g.order) {
    const auto& c = g.by.at(name);
    if (!c.valid.count(0) || c.valid.at(0).adapter == "none") continue;
    const auto at = name.find("_lr");
    const auto base = at == std::string::npos ? name : name.substr(0, at);
    const auto tag = at == std::string::npos ? std::string("3e-3") : name.substr(at + 3);
    if (!by.count(base)) bases.push_back(base);
    by[base][tag] = c.valid.at(0).ppl;
  }
  bool any_check = false;
  for (const auto& b : bases) any_check |= by[b].size() > 1;
  if (!any_check) return "";
  std::string md =
      "\n## Learning-rate check (seed 0)\n\nValid perplexity of every adapter at three "
      "learning rates (the grid's seeds run at 3e-3); \"best\" is chosen on valid.\n\n" +
      md_header({"configuration", "lr 1e-3", "lr 3e-3", "lr 1e-2", "best"}, "lrrrl");
  for (const auto& b : bases) {
    std::vector<std::string> row = {g.by.count(b) ? g.by.at(b).label : b};
    std::string best;
    double best_ppl = INFINITY;
    for (const auto& t : tags) {
      const auto it = by[b].find(t);
      row.push_back(it == by[b].end() ? "" : fmt::format("{:.3f}", it->second));
      if (it != by[b].end() && it->second < best_ppl) best_ppl = it->second, best = t;
    }
    row.push_back(best);
    md += md_row(row);
  }
  return md;
}

// Test perplexity against trainable parameters (log scale), mean ± sd over seeds.
std::string ppl_plot(const Grid& g, const std::string& plot_dir) {
  std::string data;
  int i = 0;
  for (const auto& name : g.order) {
    const auto& c = g.by.at(name);
    if (is_lr_check(name) || c.test.empty() || c.init == "teacher") continue;
    const auto s = sample_stats(ppls(c.test));
    data += fmt::format("{} {} {} \"{}\"\n", c.trainable, s.mean, s.sd, name);
    ++i;
  }
  if (!i || plot_dir.empty()) return "";
  write_file_atomic(plot_dir + "/tied_lora.dat", data);
  return "\n" + svg_links(render_plot(plot_dir, "tied_lora",
                                      "set title 'test perplexity against trainable parameters "
                                      "(mean ± sd over seeds)'\nset xlabel 'trainable "
                                      "parameters'\nset ylabel 'test ppl'\nset logscale x\n"
                                      "set grid\nplot 'tied_lora.dat' using 1:2:3 with "
                                      "yerrorbars pt 7 notitle, '' using 1:2:4 with labels "
                                      "offset 0,1 font ',8' notitle\n"),
                          "test perplexity against trainable parameters");
}

}  // namespace

std::string tied_lora_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  const Grid g = read_grid(rows);
  std::string md = "## Configurations\n\n";
  if (g.order.empty()) return md + "No model finished.\n";
  const auto& any = g.by.begin()->second.valid.begin()->second;
  const Config* lora = g.by.count("lora") ? &g.by.at("lora") : nullptr;
  md += fmt::format(
      "WordNet glosses, byte tokenizer; d_model {}, {} layers; valid and test: consecutive "
      "windows of {} tokens, the first {} tokens of each split. Every adapter (rank {}, on "
      "{}) and the full finetuning start from the same converted model of their seed (Hedgehog "
      "+ attention transfer) and train for {} steps. \"of LoRA's\" = trainable parameters as a "
      "fraction of LoRA's. \"LoRA's gain kept\" = (converted − config) / (converted − LoRA) "
      "on valid, per seed. \"test vs LoRA\" = the per-seed test perplexity ratio − 1, mean ± sd "
      "[95% t interval]. {}\n\n",
      any.d_model, any.n_layer, any.eval_context, any.eval_tokens,
      lora ? lora->valid.begin()->second.adapter_rank.value_or(0) : 0,
      lora ? lora->valid.begin()->second.adapter_targets.value_or("") : "",
      lora ? lora->valid.begin()->second.steps : 0, seeds_note(count_seeds(rows)));
  md += main_table(g, lora);
  md += lr_table(g);
  md += ppl_plot(g, plot_dir);
  return md;
}

}  // namespace seqlab
