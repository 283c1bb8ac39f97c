// Suite `objectives`: multilingual pretraining objectives compared on equal data and compute
// (Li et al. 2024, "A Comparison of Language Modeling and Translation as Multilingual Pretraining
// Objectives", Helsinki-NLP lm-vs-mt), at toy scale on the synthetic three-language corpus of
// tasks/grammar.h. Every objective pretrains its natural architecture (decoder: clm, clm_pairs;
// bidirectional encoder: mlm; encoder-decoder: denoise, translate), plus an unpretrained baseline
// of each architecture; each model is then probed (frozen, linear head) and finetuned on POS
// tagging and subject-number classification in each language.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/methods/objectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace seqlab {

namespace {

std::string objectives_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

// (stack, objective) in report order.
const std::vector<std::pair<std::string, std::string>> kGrid = {
    {"decoder", "none"}, {"decoder", "clm"}, {"decoder", "clm_pairs"}, {"encoder", "none"},
    {"encoder", "mlm"},  {"encdec", "none"}, {"encdec", "denoise"},    {"encdec", "translate"},
};

}  // namespace

SuiteSpec objectives_suite(bool quick) {
  SuiteSpec s;
  s.name = "objectives";
  s.description =
      "multilingual pretraining objectives (clm, mlm, clm on translation pairs, denoising, "
      "translation) on equal data and compute, probed and finetuned on POS tagging and sentence "
      "classification in three synthetic languages (Li+ 2024)";
  s.claims =
      "- Li, Ji, Mickus, Segonne and Tiedemann (2024), \"A Comparison of Language Modeling and "
      "Translation as Multilingual Pretraining Objectives\" (EMNLP; Helsinki-NLP/lm-vs-mt): with "
      "data and compute controlled, (1) **the architecture decides which pretraining objective "
      "is best** (single-stack and encoder-decoder models rank the objectives differently), and "
      "(2) **translation is a very effective pretraining objective under the right conditions**. "
      "Here each architecture's translation objective (decoder: causal LM on translation pairs; "
      "encoder-decoder: translation) is compared with its monolingual twin (causal LM; "
      "denoising) on the same data and compute.";
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0, 1, 2} : std::vector<uint64_t>{0, 1, 2, 3, 4};
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"softmax"} : std::vector<std::string>{"softmax", "linear"};
  for (const auto& arch : archs)
    for (uint64_t seed : seeds)
      for (const auto& [stack, objective] : kGrid) {
        ObjectivesConfig c;
        c.objective = objective;
        c.stack = stack;
        c.arch = arch;
        c.d_model = 64;
        c.n_head = 4;
        c.n_layer = 4;
        c.steps = quick ? 600 : 3000;
        c.warmup = quick ? 60 : 200;
        c.batch = 32;
        c.seed = seed;
        c.probe_train = quick ? 1000 : 2000;
        c.probe_steps = 1000;
        // Few finetuning sentences: with hundreds, every model (pretrained or not) tags at ~99%.
        c.ft_train = quick ? 100 : 200;
        c.ft_steps = quick ? 100 : 200;
        c.test_size = quick ? 500 : 1000;
        c.threads = 1;
        c.validate();
        s.cells.push_back({{"id", fmt::format("{}_{}_{}_s{}", arch, stack, objective, seed)},
                           {"kind", "objectives"},
                           {"config", c.to_json()}});
      }
  s.custom_report = objectives_report;
  return s;
}

namespace {

using Stat = SampleStats;
Stat stat(const std::vector<double>& v) {
  return sample_stats(v);
}

std::string cell_text(const Stat& s) {
  if (s.n == 0) return "—";
  return fmt::format("{:.3f} ± {:.3f}", s.mean, s.sd);
}

const std::vector<std::pair<std::string, std::string>> kColumns = {
    {"pos", "probe"}, {"pos", "finetune"}, {"label", "probe"}, {"label", "finetune"}};

std::string objectives_report(const std::vector<nlohmann::json>& rows,
                              const std::string& plot_dir) {
  // acc[arch][stack][objective][task/mode][language][seed]
  using Key = std::tuple<std::string, std::string, std::string>;  // arch, stack, objective
  std::map<Key, std::map<std::string, std::map<std::string, std::map<uint64_t, double>>>> acc;
  // Report order: by arch, then the grid's (stack, objective) order.
  struct GridOrder {
    static size_t rank(const Key& k) {
      for (size_t i = 0; i < kGrid.size(); ++i)
        if (kGrid[i].first == std::get<1>(k) && kGrid[i].second == std::get<2>(k)) return i;
      return kGrid.size();
    }
    bool operator()(const Key& a, const Key& b) const {
      return std::make_tuple(std::get<0>(a), rank(a), a) <
             std::make_tuple(std::get<0>(b), rank(b), b);
    }
  };
  std::map<Key, nlohmann::json, GridOrder> first;
  std::set<std::string> languages;
  std::set<uint64_t> seeds;
  for (const auto& r : rows) {
    if (r.value("kind", "") != "objectives") continue;
    const Key k{r["arch"].get<std::string>(), r["stack"].get<std::string>(),
                r["objective"].get<std::string>()};
    const auto col = r["task"].get<std::string>() + "/" + r["mode"].get<std::string>();
    acc[k][col][r["language"].get<std::string>()][r["seed"].get<uint64_t>()] =
        r["accuracy"].get<double>();
    if (!first.count(k)) first[k] = r;
    languages.insert(r["language"].get<std::string>());
    seeds.insert(r["seed"].get<uint64_t>());
  }
  if (acc.empty()) return "No objectives rows.\n";
  // Per seed, the mean over languages; then mean ± sd over seeds.
  auto over_langs = [&](const Key& k, const std::string& col) {
    std::vector<double> v;
    if (!acc[k].count(col)) return stat(v);
    for (uint64_t s : seeds) {
      double sum = 0;
      size_t n = 0;
      for (const auto& l : languages)
        if (acc[k][col].count(l) && acc[k][col][l].count(s)) sum += acc[k][col][l][s], ++n;
      if (n == languages.size()) v.push_back(sum / n);
    }
    return stat(v);
  };
  auto one_lang = [&](const Key& k, const std::string& col, const std::string& l) {
    std::vector<double> v;
    if (acc[k].count(col) && acc[k][col].count(l))
      for (const auto& [s, a] : acc[k][col][l]) v.push_back(a);
    return stat(v);
  };
  const auto& a = first.begin()->second;
  int64_t max_steps = 0;
  for (const auto& [k, r] : first) max_steps = std::max(max_steps, r["steps"].get<int64_t>());
  std::string md = fmt::format(
      "## Setup\n\nSynthetic corpus (tasks/grammar.h): three languages L0 (SVO, adjective before "
      "the noun, prepositions), L1 (SOV, adjective after, postpositions, particles after the "
      "verb), L2 (VOS); disjoint vocabularies; four noun/verb homographs per language. Tasks: "
      "POS tagging (7 tags, accuracy over words) and the subject's number (2 classes, accuracy "
      "over sentences; needs the clause structure, since objects carry number too and L2 puts "
      "the object first). Probe = frozen model + linear head; finetune = model + linear head "
      "trained together, on {} sentences per language (probe heads: {}; test: {}). Every model: "
      "d_model {}, {} blocks in all "
      "(encdec: {} encoder + {} decoder; downstream uses its encoder), {} pretraining steps of "
      "{} token positions each (pair objectives: half as many rows of twice the length), seeds "
      "{}. Cells: mean over the {} languages per seed, then mean ± sd over seeds.\n\n",
      a.value("ft_train", int64_t{0}), a.value("probe_train", int64_t{0}),
      a.value("test_size", int64_t{0}), a["d_model"].get<int64_t>(), a["n_layer"].get<int64_t>(),
      a["n_layer"].get<int64_t>() / 2,
      a["n_layer"].get<int64_t>() - a["n_layer"].get<int64_t>() / 2, max_steps,
      a["tokens_per_step"].get<int64_t>(), seeds.size(), languages.size());
  std::set<std::string> archs;
  for (const auto& [k, v] : acc) archs.insert(std::get<0>(k));
  std::vector<std::string> stack_order = {"decoder", "encoder", "encdec"};
  for (const auto& arch : archs) {
    md += fmt::format(
        "## Objectives × architectures × tasks ({})\n\n"
        "| architecture | objective | parameters | held-out pretrain loss | POS probe | POS "
        "finetune | subject-number probe | subject-number finetune |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|\n",
        arch);
    for (const auto& st : stack_order)
      for (const auto& [k, r] : first) {
        if (std::get<0>(k) != arch || std::get<1>(k) != st) continue;
        std::string loss = r["objective"] == "none"
                               ? "—"
                               : fmt::format("{:.3f}", r["pretrain_heldout_loss"].get<double>());
        md += fmt::format("| {} | {} | {} | {} |", st, std::get<2>(k),
                          r["parameters"].get<int64_t>(), loss);
        for (const auto& [t, m] : kColumns)
          md += " " + cell_text(over_langs(k, t + "/" + m)) + " |";
        md += "\n";
      }
    md +=
        "\nThe held-out loss is each objective's own (next-token, masked-word or target-token "
        "cross-entropy on 512 held-out rows): comparable within an objective, not across.\n";
    md += fmt::format("\n### Per language ({})\n\n| architecture | objective |", arch);
    std::string sep = "|---|---|";
    for (const auto& [t, m] : kColumns)
      for (const auto& l : languages) {
        md += fmt::format(" {} {} {} |", t == "pos" ? "POS" : "subj-num", m, l);
        sep += "---:|";
      }
    md += "\n" + sep + "\n";
    for (const auto& st : stack_order)
      for (const auto& [k, r] : first) {
        if (std::get<0>(k) != arch || std::get<1>(k) != st) continue;
        md += fmt::format("| {} | {} |", st, std::get<2>(k));
        for (const auto& [t, m] : kColumns)
          for (const auto& l : languages) {
            auto s = one_lang(k, t + "/" + m, l);
            md += s.n ? fmt::format(" {:.3f} |", s.mean) : " — |";
          }
        md += "\n";
      }
    md += "\n";
  }
  // The paper's observations, checked per arch and column.
  md += "## The paper's observations at this scale\n\n";
  auto diff_text = [](const Stat& x, const Stat& y) {
    const double d = x.mean - y.mean;
    const double se = std::sqrt(x.sd * x.sd / std::max<int64_t>(1, x.n) +
                                y.sd * y.sd / std::max<int64_t>(1, y.n));
    const char* verdict = se > 0 && std::fabs(d) > 2 * se ? "clear" : "within noise";
    return fmt::format("{:+.3f} ({}; 2·se = {:.3f})", d, verdict, 2 * se);
  };
  for (const auto& arch : archs) {
    auto K = [&](const std::string& st, const std::string& o) { return Key{arch, st, o}; };
    md += fmt::format("### {}\n\n", arch);
    md +=
        "Best objective per architecture and task (mean over languages and seeds; baselines "
        "without pretraining included):\n\n| architecture |";
    for (const auto& [t, m] : kColumns)
      md += fmt::format(" {} {} |", t == "pos" ? "POS" : "subj-num", m);
    md += "\n|---|---|---|---|---|\n";
    std::map<std::string, std::vector<std::string>> best_by_stack;
    for (const auto& st : stack_order) {
      md += "| " + st + " |";
      for (const auto& [t, m] : kColumns) {
        std::string best;
        double bv = -1;
        for (const auto& [k, r] : first)
          if (std::get<0>(k) == arch && std::get<1>(k) == st) {
            auto s = over_langs(k, t + "/" + m);
            if (s.n && s.mean > bv) bv = s.mean, best = std::get<2>(k);
          }
        best_by_stack[st].push_back(best);
        md += best.empty() ? " — |" : fmt::format(" {} ({:.3f}) |", best, bv);
      }
      md += "\n";
    }
    md +=
        "\nTranslation against its own architecture's monolingual objective (difference of "
        "means, translation minus the other; \"clear\" when it exceeds twice its standard "
        "error over seeds):\n\n| comparison | POS probe | POS finetune | subj-num probe | "
        "subj-num finetune |\n|---|---:|---:|---:|---:|\n";
    const std::vector<std::tuple<std::string, Key, Key>> comps = {
        {"decoder: clm_pairs − clm", K("decoder", "clm_pairs"), K("decoder", "clm")},
        {"encdec: translate − denoise", K("encdec", "translate"), K("encdec", "denoise")},
        {"encdec translate − encoder mlm", K("encdec", "translate"), K("encoder", "mlm")},
        {"decoder clm_pairs − encoder mlm", K("decoder", "clm_pairs"), K("encoder", "mlm")},
    };
    for (const auto& [name, x, y] : comps) {
      if (!acc.count(x) || !acc.count(y)) continue;
      md += "| " + name + " |";
      for (const auto& [t, m] : kColumns)
        md += " " + diff_text(over_langs(x, t + "/" + m), over_langs(y, t + "/" + m)) + " |";
      md += "\n";
    }
    md +=
        "\nPretraining against none (the same architecture untrained), probe columns:\n\n"
        "| architecture | objective | POS probe gain | subj-num probe gain |\n"
        "|---|---|---:|---:|\n";
    for (const auto& [k, r] : first) {
      if (std::get<0>(k) != arch || std::get<2>(k) == "none") continue;
      const Key base{arch, std::get<1>(k), "none"};
      if (!acc.count(base)) continue;
      md += fmt::format("| {} | {} | {} | {} |\n", std::get<1>(k), std::get<2>(k),
                        diff_text(over_langs(k, "pos/probe"), over_langs(base, "pos/probe")),
                        diff_text(over_langs(k, "label/probe"), over_langs(base, "label/probe")));
    }
    md += "\n";
  }
  if (plot_dir.empty() || archs.empty()) return md;
  // Grouped bars: one group per (stack, objective), one bar per task/mode, error bars = sd.
  const std::string arch = *archs.begin();
  std::string data = "# label pos_probe sd pos_ft sd label_probe sd label_ft sd\n";
  for (const auto& st : stack_order)
    for (const auto& [k, r] : first) {
      if (std::get<0>(k) != arch || std::get<1>(k) != st) continue;
      data += fmt::format("\"{}\\n{}\"", st, std::get<2>(k));
      for (const auto& [t, m] : kColumns) {
        auto s = over_langs(k, t + "/" + m);
        data += fmt::format(" {:.4f} {:.4f}", s.mean, s.sd);
      }
      data += "\n";
    }
  write_file_atomic(plot_dir + "/objectives.dat", data);
  const std::string body = fmt::format(
      "set title 'Downstream accuracy by pretraining objective ({}; mean over languages, sd over "
      "seeds)'\nset ylabel 'accuracy'\nset yrange [0:1.2]\nset style data histograms\n"
      "set style histogram errorbars gap 1 lw 1\nset style fill solid 0.7 border -1\n"
      "set key top center horizontal\nset grid ytics\nset xtics font ',8'\n"
      "plot 'objectives.dat' using 2:3:xtic(1) title 'POS probe', '' using 4:5 title 'POS "
      "finetune', '' using 6:7 title 'subject-number probe', '' using 8:9 title 'subject-number "
      "finetune'\n",
      arch);
  const auto imgs = render_plot(plot_dir, "objectives", body);
  md += "## Plot\n\n";
  for (const auto& i : imgs)
    if (i.size() > 4 && i.substr(i.size() - 4) == ".svg")
      md += fmt::format("![downstream accuracy by objective](plots/{})\n\n", i);
  return md;
}

}  // namespace

}  // namespace seqlab
