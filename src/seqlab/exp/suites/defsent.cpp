// Suite `defsent`: sentence embeddings from WordNet definitions.
//
// Per seed: a bidirectional encoder with a BPE learned on the train glosses is pretrained with
// masked LM (the untrained pooled baseline, "mlm"; the random initialisation is measured too);
// DefSent (Tsukagoshi et al. 2021) trains a copy on the one-token entries through the frozen
// prediction layer; DefSent+ (Liu 2024) trains copies against entry embeddings built
// progressively from the encoder's own definition embeddings, plain and whitened, for several
// rounds. Every model is measured on the reverse dictionary (held-out entries: MRR, recall@10),
// the Wu–Palmer similarity proxy (Spearman) and isotropy (exp/cells/defsent.h,
// methods/embed_eval.h).
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/defsent.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

namespace seqlab {

namespace {

std::string defsent_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

}  // namespace

SuiteSpec defsent_suite(bool quick) {
  SuiteSpec s;
  s.name = "defsent";
  s.description =
      "DefSent and DefSent+ sentence embeddings from WordNet definitions against the "
      "masked-LM encoder they start from: reverse dictionary (MRR, recall@10), Wu-Palmer "
      "similarity proxy (Spearman), isotropy";
  s.claims =
      "- Tsukagoshi, Sasano and Takeda (2021), DefSent: training a pretrained LM to predict the "
      "defined word from its definition's pooled embedding, through the frozen word-prediction "
      "layer, gives sentence embeddings that beat the untrained pooled LM on unsupervised STS "
      "(BERT-base mean pooling: about 0.55 average Spearman before, about 0.77 after).\n"
      "- Liu (2024), DefSent+: entry embeddings built from the LM's own definition embeddings "
      "(any entry, multi-word ones included) and projected into a (quasi-)isotropic space, with "
      "progressive separate training, beat DefSent on STS by about 1-3 points of Spearman.\n"
      "- Here the STS measure is a proxy: Spearman between the cosine of two held-out WordNet "
      "definitions and the Wu-Palmer similarity of their synsets; reverse-dictionary retrieval "
      "on held-out entries is the second measure.";
  const int64_t D = quick ? 64 : 128, L = quick ? 2 : 4, H = 4;
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{1, 2, 3} : std::vector<uint64_t>{1, 2, 3, 4, 5};
  const int64_t max_tokens = 48;
  const nlohmann::json encoder = {{"pooling", "mean"}, {"max_tokens", max_tokens}};
  const nlohmann::json eval = {{"max_queries", quick ? 1000 : 3000},
                               {"n_pairs", quick ? 2000 : 4000}};
  const nlohmann::json mlm = {{"steps", quick ? 3000 : 10000}, {"batch", 64}, {"lr", 1e-3}};
  const nlohmann::json train = {
      {"steps", quick ? 600 : 3000}, {"batch", 64}, {"lr", 1e-3}, {"temperature", 0.05}};
  // Definition training's learning rate is chosen per method on the valid split (the report).
  const std::vector<std::pair<double, std::string>> lrs = {
      {3e-4, "3e-4"}, {1e-3, "1e-3"}, {3e-3, "3e-3"}, {1e-2, "1e-2"}};
  const int64_t entries = quick ? 8000 : 0, rounds = quick ? 2 : 3;
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"softmax"} : std::vector<std::string>{"softmax", "elu1"};
  for (const auto& arch : archs)
    for (auto seed : seeds) {
      const auto tag = fmt::format("{}_s{}", arch, seed);
      const auto mlm_id = "mlm_" + tag;
      auto common = [&](const std::string& id, const std::string& stage, const std::string& label) {
        nlohmann::json c = {{"id", id},       {"kind", "defsent"}, {"stage", stage},
                            {"label", label}, {"seed", seed},      {"encoder", encoder},
                            {"eval", eval}};
        if (stage != "mlm") {
          c["from"] = mlm_id;
          c["after"] = {mlm_id};
          c["train"] = train;
          c["entries"] = entries;
        }
        return c;
      };
      auto m = common(mlm_id, "mlm", "masked-LM encoder (untrained pooling)");
      m["model"] = grid_model(arch, D, L, max_tokens,
                              {{"n_head", H},
                               {"causal", false},
                               {"head", "tag"},
                               {"vocab_size", 4002},
                               {"n_classes", 4002}});
      m["bpe_vocab"] = 4000;
      m["mlm"] = mlm;
      s.cells.push_back(m);
      for (const auto& [lr, lr_tag] : lrs) {
        const auto sfx = "_lr" + lr_tag + "_" + tag;
        auto d = common("defsent" + sfx, "defsent", "DefSent (frozen word head)");
        d["train"]["lr"] = lr;
        s.cells.push_back(d);
        for (bool white : {false, true}) {
          auto c = common((white ? "dplusw" : "dplus") + sfx, "defsent_plus",
                          white ? "DefSent+ (whitened entries)" : "DefSent+ (raw entries)");
          c["train"]["lr"] = lr;
          c["rounds"] = rounds;
          c["whiten"] = white;
          s.cells.push_back(c);
        }
      }
    }
  s.custom_report = defsent_report;
  return s;
}

namespace {

using Stat = SampleStats;
Stat stat(const std::vector<double>& v) {
  return sample_stats(v);
}

// mean ± sd [95% t interval] (exp/stats.h).
std::string cell(const Stat& s, int digits = 3) {
  return s.n == 0 ? "—" : fmt_mean_sd_ci(s, digits);
}

// For values spanning orders of magnitude (the partition ratio).
std::string cell_g(const Stat& s) {
  if (s.n == 0) return "—";
  if (s.n == 1) return fmt::format("{:.2g} (n=1, no interval)", s.mean);
  const auto i = mean_interval(s);
  return fmt::format("{:.2g} ± {:.2g} [{:.2g}, {:.2g}]", s.mean, s.sd, i.lo, i.hi);
}

const std::vector<std::string> kMethods = {"random", "mlm", "defsent", "defsent+", "defsent+white"};

// One metric's values over seeds, for each metric the report shows.
struct Metrics {
  std::vector<double> mrr, recall10, spearman, mean_cos, partition, top_pc;
  void add(const DefsentRow& r) {
    mrr.push_back(r.mrr);
    recall10.push_back(r.recall10);
    spearman.push_back(r.spearman);
    mean_cos.push_back(r.mean_cos);
    partition.push_back(r.partition);
    top_pc.push_back(r.top_pc);
  }
};

// valid: the same methods on the valid split (empty for runs without one), where DefSent+'s better
// variant is chosen.
std::string method_table(const std::map<std::string, Metrics>& methods,
                         const std::map<std::string, Metrics>& valid,
                         std::map<std::string, std::string>& labels) {
  std::string md = md_header({"method", "seeds", "MRR", "recall@10", "Spearman (WuP proxy)",
                              "mean cos", "partition ratio", "top-PC var"},
                             "llllllll");
  for (const auto& m : kMethods) {
    auto it = methods.find(m);
    if (it == methods.end()) continue;
    const auto& v = it->second;
    md += md_row({labels[m], std::to_string(v.mrr.size()), cell(stat(v.mrr), 4),
                  cell(stat(v.recall10), 4), cell(stat(v.spearman)), cell(stat(v.mean_cos)),
                  cell_g(stat(v.partition)), cell(stat(v.top_pc))});
  }
  auto values = [&](const std::string& m, std::vector<double> Metrics::*k) {
    auto it = methods.find(m);
    return it == methods.end() ? std::vector<double>{} : it->second.*k;
  };
  // "yes" / "**no**" on the means, then the difference with Welch's interval over seeds.
  auto verdict = [](const std::vector<double>& a, const std::vector<double>& b) {
    const auto d = welch_difference(a, b);
    return fmt::format("{} ({})", d.diff > 0 ? "yes" : "**no**", fmt_difference(d, 4));
  };
  auto valid_mean = [&](const std::string& m, std::vector<double> Metrics::*k) {
    auto it = valid.find(m);
    return it == valid.end() ? -INFINITY : stat(it->second.*k).mean;
  };
  md += "\nTargets (test; means over seeds; difference, Welch 95% interval):\n\n";
  for (const auto& [name, k] :
       {std::pair{"MRR", &Metrics::mrr}, std::pair{"Spearman", &Metrics::spearman}}) {
    const auto b = values("mlm", k), d = values("defsent", k);
    // DefSent+'s better variant: on the valid means (on the test means in runs without valid).
    const bool on_valid = valid.count("defsent+") || valid.count("defsent+white");
    const bool white =
        on_valid ? valid_mean("defsent+white", k) > valid_mean("defsent+", k)
                 : stat(values("defsent+white", k)).mean > stat(values("defsent+", k)).mean ||
                       values("defsent+", k).empty();
    const auto p = values(white ? "defsent+white" : "defsent+", k);
    md += fmt::format(
        "- {}: DefSent > MLM {}; DefSent+ ({}, chosen on {}) > DefSent {}; DefSent+ > MLM "
        "{}.\n",
        name, verdict(d, b), white ? "whitened" : "raw", on_valid ? "valid" : "test means",
        verdict(p, d), verdict(p, b));
  }
  return md + "\n";
}

std::string rounds_table(const std::map<std::string, std::map<int64_t, Metrics>>& rounds) {
  std::string md =
      "## DefSent+ by round\n\n" +
      md_header({"encoder, method", "round", "MRR", "Spearman", "mean cos", "partition ratio"},
                "llllll");
  for (const auto& [name, rs] : rounds)
    for (const auto& [round, v] : rs)
      md += md_row({name, std::to_string(round), cell(stat(v.mrr), 4), cell(stat(v.spearman)),
                    cell(stat(v.mean_cos)), cell_g(stat(v.partition))});
  return md + "\n";
}

// One scatter per metric, one point per (method, seed): x = the method's position.
std::string defsent_plots(const std::vector<DefsentRow>& rows,
                          const std::map<std::string, int64_t>& last_round,
                          const std::string& plot_dir) {
  std::string data;
  std::string xtics;
  size_t idx = 0;
  for (size_t i = 0; i < kMethods.size(); ++i) {
    bool any = false;
    for (const auto& r : rows)
      if (r.method == kMethods[i] && r.round == last_round.at(r.cell)) {
        data += fmt::format("{} {} {} {}\n", i, r.mrr, r.spearman, r.mean_cos);
        any = true;
      }
    if (any) xtics += fmt::format("{}'{}' {}", gp_sep(idx++), kMethods[i], i);
  }
  if (data.empty()) return "";
  write_file_atomic(plot_dir + "/defsent.dat", data);
  std::string md = "\n## Plots\n\n";
  const std::string head =
      fmt::format("set xtics ({})\nset xrange [-0.5:{}]\nset grid\nset key off\n", xtics,
                  kMethods.size() - 0.5);
  // One scatter per metric: the data file's column, the plot's title and y label, the image's alt.
  struct Panel {
    const char* stem;
    int column;
    const char* title;
    const char* ylabel;
    const char* alt;
  };
  const Panel panels[] = {
      {"defsent_mrr", 2, "Reverse dictionary on held-out entries (one point per seed)", "MRR",
       "MRR by method"},
      {"defsent_spearman", 3, "Wu-Palmer similarity proxy (one point per seed)", "Spearman",
       "Spearman by method"},
      {"defsent_isotropy", 4, "Mean cosine of random pairs (0 = isotropic)", "mean cosine",
       "mean cosine by method"},
  };
  for (const auto& p : panels)
    md += svg_links(
        render_plot(plot_dir, p.stem,
                    head + fmt::format("set title '{}'\nset ylabel '{}'\nplot 'defsent.dat' "
                                       "using 1:{} with points pt 7 ps 1.5\n",
                                       p.title, p.ylabel, p.column)),
        p.alt);
  return md;
}

using ArchMethod = std::pair<std::string, std::string>;

// The definition-training learning rate of each (arch, method), chosen on valid: the highest mean
// valid MRR over seeds (DefSent+ at its last round). Methods without a rate (random, mlm) or with
// one rate keep it; -1 stands for "no rate".
std::map<ArchMethod, double> choose_lr(const std::vector<DefsentRow>& rows,
                                       const std::map<std::string, int64_t>& last_round,
                                       std::string& table) {
  std::map<ArchMethod, std::map<double, Metrics>> valid;
  std::map<ArchMethod, std::set<double>> rates;
  for (const auto& r : rows) {
    if (r.round != last_round.at(r.cell)) continue;
    const double lr = r.lr.value_or(-1);
    rates[{r.arch, r.method}].insert(lr);
    if (r.split == "valid") valid[{r.arch, r.method}][lr].add(r);
  }
  std::map<ArchMethod, double> chosen;
  std::string md;
  for (const auto& [key, lrs] : rates) {
    chosen[key] = *lrs.begin();
    if (lrs.size() < 2 || !valid.count(key)) continue;
    double best = -INFINITY;
    for (const auto& [lr, m] : valid[key])
      if (stat(m.mrr).mean > best) best = stat(m.mrr).mean, chosen[key] = lr;
    for (const auto& [lr, m] : valid[key])
      md += md_row({key.first, key.second, fmt::format("{:g}", lr), std::to_string(m.mrr.size()),
                    cell(stat(m.mrr), 4), cell(stat(m.spearman)),
                    lr == chosen[key] ? "**chosen**" : ""});
  }
  if (!md.empty())
    table =
        "## Settings chosen on valid\n\nDefinition training's learning rate per method: the one "
        "with the highest mean valid MRR over seeds (DefSent+ at its last round). Valid: held-out "
        "definitions whose words are all valid-split entries, disjoint from the test ones. The "
        "tables below are test-split numbers at the chosen rates only.\n\n" +
        md_header({"encoder", "method", "lr", "seeds", "valid MRR", "valid Spearman", ""},
                  "lllrlll") +
        md + "\n";
  return chosen;
}

std::string defsent_report(const std::vector<nlohmann::json>& json_rows,
                           const std::string& plot_dir) {
  std::vector<DefsentRow> all;
  for (const auto& j : json_rows) all.push_back(read_row<DefsentRow>(j));
  // (arch, method) -> metric -> values over seeds; DefSent+ rows: the last round of each cell.
  std::map<std::string, int64_t> last_round;
  for (const auto& r : all) last_round[r.cell] = std::max(last_round[r.cell], r.round);
  std::string choice;
  const auto chosen = choose_lr(all, last_round, choice);
  // The tables: test rows at the chosen rate; valid rows at the chosen rate for DefSent+'s
  // variant choice.
  std::vector<DefsentRow> rows;
  std::map<std::string, std::map<std::string, Metrics>> valid;
  for (const auto& r : all) {
    if (r.lr.value_or(-1) != chosen.at({r.arch, r.method})) continue;
    if (r.split == "test")
      rows.push_back(r);
    else if (r.round == last_round[r.cell])
      valid[r.arch][r.method].add(r);
  }
  std::map<std::string, std::map<std::string, Metrics>> by;
  std::map<std::string, std::map<int64_t, Metrics>> rounds;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::vector<double>> secs;
  for (const auto& r : rows) {
    labels[r.method] = r.label;
    if (r.method.rfind("defsent+", 0) == 0) rounds[r.arch + " " + r.method][r.round].add(r);
    if (r.round != last_round[r.cell]) continue;
    by[r.arch][r.method].add(r);
    if (r.train_seconds) secs[r.method].push_back(*r.train_seconds);
  }
  std::string md =
      "Reverse dictionary: held-out definitions against every test-split entry word (cosine). "
      "Similarity: Spearman between the cosine of two held-out noun definitions and the "
      "Wu–Palmer similarity of their synsets — a proxy for STS, not STS. Isotropy of the query "
      "embeddings: mean cosine of all pairs (0 = isotropic), partition ratio min/max Z(c) over "
      "± eigenvectors (1 = isotropic), share of variance on the top principal component. "
      "Mean ± sd over seeds; DefSent+ at its last round.\n\n" +
      choice;
  for (const auto& [arch, methods] : by)
    md += fmt::format("## {} encoder\n\n", arch) + method_table(methods, valid[arch], labels);
  if (!rounds.empty()) md += rounds_table(rounds);
  if (!secs.empty()) {
    md += "Training seconds (mean over seeds; DefSent+: its last round): ";
    for (const auto& [m, v] : secs) md += fmt::format("{} {:.0f}; ", m, stat(v).mean);
    md += "\n";
  }
  if (plot_dir.empty()) return md;
  return md + defsent_plots(rows, last_round, plot_dir);
}

}  // namespace

}  // namespace seqlab
