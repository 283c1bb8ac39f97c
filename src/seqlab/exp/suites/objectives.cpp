// Suite `objectives`: multilingual pretraining objectives compared on equal data and compute
// (Li et al. 2024, "A Comparison of Language Modeling and Translation as Multilingual Pretraining
// Objectives", Helsinki-NLP lm-vs-mt), at toy scale on the synthetic three-language corpus of
// tasks/grammar.h. Every objective pretrains its natural architecture (decoder: clm, clm_pairs;
// bidirectional encoder: mlm; encoder-decoder: denoise, translate), plus an unpretrained baseline
// of each architecture; each model is then probed (frozen, linear head) and finetuned on POS
// tagging and subject-number classification in each language.
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/objectives.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"
#include "seqlab/methods/objectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

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

// mean ± sd [95% t interval] over seeds (exp/stats.h).
std::string cell_text(const Stat& s) {
  return s.n == 0 ? "—" : fmt_mean_sd_ci(s, 3);
}

const std::vector<std::pair<std::string, std::string>> kColumns = {
    {"pos", "probe"}, {"pos", "finetune"}, {"label", "probe"}, {"label", "finetune"}};
const std::vector<std::string> kStackOrder = {"decoder", "encoder", "encdec"};

using Key = std::tuple<std::string, std::string, std::string>;  // arch, stack, objective

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

// The accuracies of every (arch, stack, objective) by task/mode, language and seed, and the
// first row of each (for its model's settings), in report order.
struct Table {
  std::map<Key, std::map<std::string, std::map<std::string, std::map<uint64_t, double>>>> acc;
  std::map<Key, ObjectivesRow, GridOrder> first;
  std::set<std::string> languages, archs;
  std::set<uint64_t> seeds;

  // Per seed, the mean over languages; then mean ± sd over seeds.
  Stat over_langs(const Key& k, const std::string& col) const {
    std::vector<double> v;
    auto a = acc.find(k);
    if (a == acc.end() || !a->second.count(col)) return stat(v);
    const auto& by_lang = a->second.at(col);
    for (uint64_t s : seeds) {
      double sum = 0;
      size_t n = 0;
      for (const auto& l : languages)
        if (by_lang.count(l) && by_lang.at(l).count(s)) sum += by_lang.at(l).at(s), ++n;
      if (n == languages.size()) v.push_back(sum / n);
    }
    return stat(v);
  }
  Stat one_lang(const Key& k, const std::string& col, const std::string& l) const {
    std::vector<double> v;
    auto a = acc.find(k);
    if (a != acc.end() && a->second.count(col) && a->second.at(col).count(l))
      for (const auto& [s, x] : a->second.at(col).at(l)) v.push_back(x);
    return stat(v);
  }
  // The configurations of one arch and stack, in report order.
  std::vector<std::pair<Key, const ObjectivesRow*>> of(const std::string& arch,
                                                       const std::string& stack) const {
    std::vector<std::pair<Key, const ObjectivesRow*>> out;
    for (const auto& [k, r] : first)
      if (std::get<0>(k) == arch && std::get<1>(k) == stack) out.emplace_back(k, &r);
    return out;
  }
};

Table tabulate(const std::vector<ObjectivesRow>& rows) {
  Table t;
  for (const auto& r : rows) {
    const Key k{r.arch, r.stack, r.objective};
    t.acc[k][r.task + "/" + r.mode][r.language][r.seed] = r.accuracy;
    if (!t.first.count(k)) t.first[k] = r;
    t.languages.insert(r.language);
    t.seeds.insert(r.seed);
    t.archs.insert(r.arch);
  }
  return t;
}

std::string setup_section(const Table& t) {
  const auto& a = t.first.begin()->second;
  int64_t max_steps = 0;
  for (const auto& [k, r] : t.first) max_steps = std::max(max_steps, r.steps);
  return fmt::format(
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
      "{}. Cells: mean over the {} languages per seed, then mean ± sd over seeds and the mean's "
      "95% t interval [lo, hi] (df = seeds - 1).\n\n",
      a.ft_train, a.probe_train, a.test_size, a.d_model, a.n_layer, a.n_layer / 2,
      a.n_layer - a.n_layer / 2, max_steps, a.tokens_per_step, t.seeds.size(), t.languages.size());
}

std::string column_name(const std::string& task) {
  return task == "pos" ? "POS" : "subj-num";
}

// Objectives x architectures x tasks, then per language, for one arch.
std::string arch_tables(const Table& t, const std::string& arch) {
  std::string md = fmt::format("## Objectives × architectures × tasks ({})\n\n", arch);
  md += md_header({"architecture", "objective", "parameters", "held-out pretrain loss", "POS probe",
                   "POS finetune", "subject-number probe", "subject-number finetune"},
                  "llrrrrrr");
  for (const auto& st : kStackOrder)
    for (const auto& [k, r] : t.of(arch, st)) {
      std::vector<std::string> row = {
          st, std::get<2>(k), std::to_string(r->parameters),
          r->objective == "none" ? "—" : fmt::format("{:.3f}", r->pretrain_heldout_loss)};
      for (const auto& [task, mode] : kColumns)
        row.push_back(cell_text(t.over_langs(k, task + "/" + mode)));
      md += md_row(row);
    }
  md +=
      "\nThe held-out loss is each objective's own (next-token, masked-word or target-token "
      "cross-entropy on 512 held-out rows): comparable within an objective, not across.\n";
  md += fmt::format("\n### Per language ({})\n\n", arch);
  std::vector<std::string> head = {"architecture", "objective"};
  for (const auto& [task, mode] : kColumns)
    for (const auto& l : t.languages)
      head.push_back(fmt::format("{} {} {}", column_name(task), mode, l));
  md += md_header(head, "ll" + std::string(head.size() - 2, 'r'));
  for (const auto& st : kStackOrder)
    for (const auto& [k, r] : t.of(arch, st)) {
      std::string line = fmt::format("| {} | {} |", st, std::get<2>(k));
      for (const auto& [task, mode] : kColumns)
        for (const auto& l : t.languages) {
          auto s = t.one_lang(k, task + "/" + mode, l);
          line += s.n ? fmt::format(" {:.3f} |", s.mean) : " — |";
        }
      md += line + "\n";
    }
  return md + "\n";
}

// "+0.120 (clear; 2·se = 0.100)": the difference of means, clear when above twice its standard
// error over seeds.
std::string diff_text(const Stat& x, const Stat& y) {
  const double d = x.mean - y.mean;
  const double se =
      std::sqrt(x.sd * x.sd / std::max<int64_t>(1, x.n) + y.sd * y.sd / std::max<int64_t>(1, y.n));
  const char* verdict = se > 0 && std::fabs(d) > 2 * se ? "clear" : "within noise";
  return fmt::format("{:+.3f} ({}; 2·se = {:.3f})", d, verdict, 2 * se);
}

// The best objective of each stack, per task and mode.
std::string best_table(const Table& t, const std::string& arch) {
  std::string md =
      "Best objective per architecture and task (mean over languages and seeds; baselines "
      "without pretraining included):\n\n| architecture |";
  for (const auto& [task, mode] : kColumns) md += fmt::format(" {} {} |", column_name(task), mode);
  md += "\n|---|---|---|---|---|\n";
  for (const auto& st : kStackOrder) {
    md += "| " + st + " |";
    for (const auto& [task, mode] : kColumns) {
      std::string best;
      double bv = -1;
      for (const auto& [k, r] : t.of(arch, st)) {
        auto s = t.over_langs(k, task + "/" + mode);
        if (s.n && s.mean > bv) bv = s.mean, best = std::get<2>(k);
      }
      md += best.empty() ? " — |" : fmt::format(" {} ({:.3f}) |", best, bv);
    }
    md += "\n";
  }
  return md;
}

// The paper's observations, checked for one arch: best objectives, translation against the
// monolingual objectives, pretraining against none.
std::string observations(const Table& t, const std::string& arch) {
  auto K = [&](const std::string& st, const std::string& o) { return Key{arch, st, o}; };
  std::string md = fmt::format("### {}\n\n", arch) + best_table(t, arch);
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
    if (!t.acc.count(x) || !t.acc.count(y)) continue;
    std::vector<std::string> row = {name};
    for (const auto& [task, mode] : kColumns)
      row.push_back(
          diff_text(t.over_langs(x, task + "/" + mode), t.over_langs(y, task + "/" + mode)));
    md += md_row(row);
  }
  md +=
      "\nPretraining against none (the same architecture untrained), probe columns:\n\n"
      "| architecture | objective | POS probe gain | subj-num probe gain |\n"
      "|---|---|---:|---:|\n";
  for (const auto& [k, r] : t.first) {
    if (std::get<0>(k) != arch || std::get<2>(k) == "none") continue;
    const Key base{arch, std::get<1>(k), "none"};
    if (!t.acc.count(base)) continue;
    md += md_row({std::get<1>(k), std::get<2>(k),
                  diff_text(t.over_langs(k, "pos/probe"), t.over_langs(base, "pos/probe")),
                  diff_text(t.over_langs(k, "label/probe"), t.over_langs(base, "label/probe"))});
  }
  return md + "\n";
}

// Grouped bars for the first arch: one group per (stack, objective), one bar per task/mode,
// error bars = sd.
std::string objectives_plot(const Table& t, const std::string& plot_dir) {
  const std::string arch = *t.archs.begin();
  std::string data = "# label pos_probe sd pos_ft sd label_probe sd label_ft sd\n";
  for (const auto& st : kStackOrder)
    for (const auto& [k, r] : t.of(arch, st)) {
      data += fmt::format("\"{}\\n{}\"", st, std::get<2>(k));
      for (const auto& [task, mode] : kColumns) {
        auto s = t.over_langs(k, task + "/" + mode);
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
  return "## Plot\n\n" +
         svg_links(render_plot(plot_dir, "objectives", body), "downstream accuracy by objective");
}

std::string objectives_report(const std::vector<nlohmann::json>& rows,
                              const std::string& plot_dir) {
  const auto t = tabulate(read_rows_of_kind<ObjectivesRow>(rows, "objectives"));
  if (t.acc.empty()) return "No objectives rows.\n";
  std::string md = setup_section(t);
  for (const auto& arch : t.archs) md += arch_tables(t, arch);
  md += "## The paper's observations at this scale\n\n";
  for (const auto& arch : t.archs) md += observations(t, arch);
  if (plot_dir.empty() || t.archs.empty()) return md;
  return md + objectives_plot(t, plot_dir);
}

}  // namespace

}  // namespace seqlab
