// The `mqar` suite's report (exp/suites/mqar.h).
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/plain.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/suites/mqar.h"
#include "seqlab/exp/tables.h"
#include "seqlab/tasks/mqar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <optional>
#include <tuple>

namespace seqlab {

namespace {

// One (architecture, width, pairs) of the grid.
struct Group {
  std::map<double, double> sweep_valid, sweep_test;  // the seed-0 sweep: lr -> accuracy
  std::vector<std::pair<double, double>> others;     // the other seeds: (lr, test accuracy)
  std::optional<int64_t> state_bytes;
  int64_t length = 0;
  // The rate with the best validation accuracy, the smaller on a tie (as lr_from_cells chooses).
  std::optional<double> chosen() const {
    std::optional<double> lr;
    double best = -1;
    for (const auto& [rate, acc] : sweep_valid)
      if (acc > best) {
        best = acc;
        lr = rate;
      }
    return lr;
  }
  // Test accuracy of every seed trained at the chosen rate.
  std::vector<double> test() const {
    std::vector<double> v;
    const auto lr = chosen();
    if (!lr) return v;
    if (auto it = sweep_test.find(*lr); it != sweep_test.end()) v.push_back(it->second);
    for (const auto& [rate, acc] : others)
      if (std::abs(rate - *lr) <= 1e-9 * *lr) v.push_back(acc);
    return v;
  }
  // Seeds whose rate is not the chosen one (a sweep that changed after they ran).
  int64_t mismatched() const {
    const auto lr = chosen();
    int64_t n = 0;
    for (const auto& [rate, acc] : others) n += !lr || std::abs(rate - *lr) > 1e-9 * *lr;
    return n;
  }
};

struct Grid {
  std::vector<std::string> archs;  // first appearance
  std::vector<int64_t> widths, pairs;
  std::map<std::tuple<std::string, int64_t, int64_t>, Group> groups;
  const Group* find(const std::string& a, int64_t w, int64_t p) const {
    auto it = groups.find({a, w, p});
    return it == groups.end() ? nullptr : &it->second;
  }
};

template <class T>
void add_once(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

Grid collect(const std::vector<nlohmann::json>& json) {
  Grid g;
  for (const auto& j : json) {
    const auto r = PlainRow::from_json(j);
    const auto pairs = r.metric("pairs");
    if (!pairs || r.task != "mqar") continue;
    const auto P = static_cast<int64_t>(*pairs);
    add_once(g.archs, r.arch);
    add_once(g.widths, r.d_model);
    add_once(g.pairs, P);
    auto& grp = g.groups[{r.arch, r.d_model, P}];
    grp.length = r.test_length;
    if (r.state_bytes) grp.state_bytes = r.state_bytes;
    const bool sweep = r.extra.value("sweep", false);
    if (sweep)
      (r.is_valid() ? grp.sweep_valid : grp.sweep_test)[r.lr] = r.accuracy;
    else if (!r.is_valid())
      grp.others.emplace_back(r.lr, r.accuracy);
  }
  std::sort(g.widths.begin(), g.widths.end());
  std::sort(g.pairs.begin(), g.pairs.end());
  return g;
}

std::string arch_label(const std::string& a) {
  // arch_short_name appends "+convK" for a short convolution (mixers/registry.h).
  if (const auto plus = a.find("+conv"); plus != std::string::npos)
    return arch_label(a.substr(0, plus)) + " + short conv";
  return a == "softmax" ? "softmax attention"
         : a == "elu1"  ? "linear attention (ELU+1)"
         : a == "lstm"  ? "LSTM"
         : a == "mamba" ? "Mamba"
                        : a;
}

std::string fmt_bytes(int64_t b) {
  return b >= 1 << 20 ? fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20))
         : b >= 1024  ? fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024)
                      : fmt::format("{} B", b);
}

std::string pivot_table(const Grid& g) {
  std::vector<std::string> cols = {"architecture", "width"};
  for (auto P : g.pairs) cols.push_back(fmt::format("P = {}", P));
  std::string md = md_header(cols, "l" + std::string(cols.size() - 1, 'r'));
  for (const auto& a : g.archs)
    for (auto w : g.widths) {
      std::vector<std::string> cells = {arch_label(a), std::to_string(w)};
      for (auto P : g.pairs) {
        const auto* grp = g.find(a, w, P);
        const auto s = sample_stats(grp ? grp->test() : std::vector<double>{});
        cells.push_back(s.n == 0 ? ""
                                 : fmt::format("{}{}", fmt_mean_sd(s.mean, s.sd, 3),
                                               s.mean >= kSuccessAccuracy ? " ✓" : ""));
      }
      md += md_row(cells);
    }
  std::vector<std::string> guess = {"value guess", ""};
  for (auto P : g.pairs) guess.push_back(fmt::format("{:.3f}", mqar_value_guess(P, kMqarValues)));
  return md + md_row(guess);
}

std::string detail_table(const Grid& g) {
  std::string md = md_header({"architecture", "width", "pairs", "T", "state",
                              "valid accuracy by lr (seed 0)", "lr", "test accuracy", "seeds"},
                             "lrrrrlrrr");
  for (auto P : g.pairs)
    for (const auto& a : g.archs)
      for (auto w : g.widths) {
        const auto* grp = g.find(a, w, P);
        if (!grp) continue;
        std::string sweep;
        const auto lr = grp->chosen();
        for (const auto& [rate, acc] : grp->sweep_valid)
          sweep += fmt::format("{}{:.0e}: {:.3f}{}", sweep.empty() ? "" : ", ", rate, acc,
                               lr && rate == *lr ? " ←" : "");
        const auto test = grp->test();
        std::string seeds = std::to_string(test.size());
        if (grp->mismatched())
          seeds += fmt::format(" ({} at another lr, left out)", grp->mismatched());
        md += md_row(
            {arch_label(a), std::to_string(w), std::to_string(P), std::to_string(grp->length),
             grp->state_bytes ? fmt_bytes(*grp->state_bytes) : "", sweep,
             lr ? fmt::format("{:.0e}", *lr) : "", fmt_mean_sd_ci(sample_stats(test), 3), seeds});
      }
  return md;
}

// The values of `axis` (widths or pairs, ascending) at which `has` finds test rows.
template <class Has>
std::vector<int64_t> with_tests(const std::vector<int64_t>& axis, Has has) {
  std::vector<int64_t> out;
  for (auto x : axis)
    if (const Group* grp = has(x); grp && !grp->test().empty()) out.push_back(x);
  return out;
}

// At each number of pairs, the architectures at the largest width where at least two of them
// have test rows (a grid run in slices may lack the widest cells at some P): best against the rest.
std::string differences(const Grid& g) {
  std::string md;
  for (auto P : g.pairs)
    for (auto w = g.widths.rbegin(); w != g.widths.rend(); ++w) {
      std::vector<std::pair<std::string, std::vector<double>>> samples;
      for (const auto& a : g.archs)
        if (const auto* grp = g.find(a, *w, P); grp && !grp->test().empty())
          samples.emplace_back(arch_label(a), grp->test());
      if (samples.size() < 2) continue;
      const auto lines = best_vs_rest(samples, 3);
      if (!lines.empty()) md += fmt::format("\nP = {}, width {}:\n\n{}", P, *w, lines);
      break;
    }
  return md.empty() ? "" : "\n## Differences (test accuracy, Welch 95%)\n" + md;
}

// How much the value guess falls from P = `from` to each P in `to` (ascending, distinct): the
// floor a fall in recall has to beat.
std::string guess_drops(int64_t from, const std::set<int64_t>& to) {
  std::string s;
  for (auto P : to)
    s += fmt::format("{}by {:.3f}{} to P = {}", s.empty() ? "" : ", ",
                     mqar_value_guess(from, kMqarValues) - mqar_value_guess(P, kMqarValues),
                     s.empty() ? fmt::format(" from P = {}", from) : "", P);
  return s;
}

// Zoology's two trends, each architecture against itself: at a fixed number of pairs, the widest
// model against the narrowest (a larger state should recall more); at a fixed width, the fewest
// pairs against the most (recall should fall as the pairs grow). Each uses the widths or pairs
// that architecture has test rows at.
std::string trends(const Grid& g) {
  auto line = [](const std::string& what, const Group* a, const Group* b) {
    if (!a || !b || a->test().empty() || b->test().empty()) return std::string();
    return fmt::format("- {}: {}\n", what,
                       fmt_difference(welch_difference(a->test(), b->test()), 3));
  };
  std::string by_width, by_pairs;
  for (auto P : g.pairs)
    for (const auto& a : g.archs) {
      const auto ws = with_tests(g.widths, [&](int64_t w) { return g.find(a, w, P); });
      if (ws.size() >= 2)
        by_width += line(
            fmt::format("{}, P = {}: width {} − width {}", arch_label(a), P, ws.back(), ws.front()),
            g.find(a, ws.back(), P), g.find(a, ws.front(), P));
    }
  std::set<int64_t> most;
  int64_t fewest = 0;
  for (auto w : g.widths)
    for (const auto& a : g.archs) {
      const auto ps = with_tests(g.pairs, [&](int64_t P) { return g.find(a, w, P); });
      if (ps.size() < 2) continue;
      fewest = ps.front();  // every line's fewest is the grid's fewest when the grid starts there
      most.insert(ps.back());
      by_pairs += line(
          fmt::format("{}, width {}: P = {} − P = {}", arch_label(a), w, ps.front(), ps.back()),
          g.find(a, w, ps.front()), g.find(a, w, ps.back()));
    }
  std::string md;
  if (!by_width.empty())
    md += "\n## Against width (test accuracy, widest − narrowest, Welch 95%)\n\n" + by_width;
  if (!by_pairs.empty())
    md += "\n## Against the number of pairs (test accuracy, fewest − most, Welch 95%)\n\n" +
          fmt::format(
              "A model that knows the context's values but not their keys scores less "
              "as the pairs grow too: the value guess (first table) falls {}. A drop is a fall "
              "in recall only where the fewer pairs score above that guess.\n\n",
              guess_drops(fewest, most)) +
          by_pairs;
  return md;
}

// One series per line: x y sd, for gnuplot's yerrorlines.
std::string series(const std::vector<std::tuple<double, double, double>>& pts) {
  std::string s;
  for (const auto& [x, y, sd] : pts) s += fmt::format("{} {} {}\n", x, y, sd);
  return s;
}

std::string plot_lines(const std::string& file, const std::vector<std::string>& titles,
                       size_t first) {
  std::string cmd;
  for (size_t i = 0; i < titles.size(); ++i)
    cmd += fmt::format("{}'{}' index {} using 1:2:3 with yerrorlines lw 2 title '{}'", gp_sep(i),
                       file, first + i, titles[i]);
  return cmd;
}

std::string plots(const Grid& g, const std::string& plot_dir) {
  std::string data_p, data_s, md;
  size_t block_p = 0, block_s = 0;
  std::vector<std::pair<std::string, std::string>> pending;  // (stem, gnuplot body)
  for (auto w : g.widths) {  // accuracy against pairs, one plot per width
    std::vector<std::string> titles;
    const size_t first = block_p;
    for (const auto& a : g.archs) {
      std::vector<std::tuple<double, double, double>> pts;
      for (auto P : g.pairs)
        if (const auto* grp = g.find(a, w, P); grp && !grp->test().empty()) {
          const auto s = sample_stats(grp->test());
          pts.emplace_back(static_cast<double>(P), s.mean, s.sd);
        }
      if (pts.empty()) continue;
      data_p += gp_block(fmt::format("{} d={}", a, w), series(pts));
      titles.push_back(arch_label(a));
      block_p += 1;
    }
    if (titles.empty()) continue;
    pending.emplace_back(
        fmt::format("pairs_d{}", w),
        fmt::format("set title 'MQAR: test accuracy against key-value pairs, width {}'\n"
                    "set xlabel 'key-value pairs P'\nset ylabel 'accuracy'\nset logscale x 2\n"
                    "set yrange [0:1.05]\nset offsets graph 0.05, graph 0.05\nset key below\n"
                    "set grid\nplot {}\n",
                    w, plot_lines("pairs.dat", titles, first)));
  }
  for (auto P : g.pairs) {  // accuracy against state size, one plot per number of pairs
    std::vector<std::string> titles;
    const size_t first = block_s;
    for (const auto& a : g.archs) {
      std::vector<std::tuple<double, double, double>> pts;
      for (auto w : g.widths)
        if (const auto* grp = g.find(a, w, P); grp && grp->state_bytes && !grp->test().empty()) {
          const auto s = sample_stats(grp->test());
          pts.emplace_back(static_cast<double>(*grp->state_bytes), s.mean, s.sd);
        }
      if (pts.empty()) continue;
      std::sort(pts.begin(), pts.end());
      data_s += gp_block(fmt::format("{} P={}", a, P), series(pts));
      titles.push_back(arch_label(a));
      block_s += 1;
    }
    if (titles.empty()) continue;
    pending.emplace_back(
        fmt::format("state_P{}", P),
        fmt::format("set title 'MQAR: test accuracy against state size, P = {}'\n"
                    "set xlabel 'state per sequence (bytes)'\nset ylabel 'accuracy'\n"
                    "set logscale x 10\nset yrange [0:1.05]\nset offsets graph 0.05, graph 0.05\n"
                    "set key below\nset grid\n"
                    "plot {}\n",
                    P, plot_lines("state.dat", titles, first)));
  }
  if (pending.empty()) return "";
  write_file_atomic(plot_dir + "/pairs.dat", data_p);
  write_file_atomic(plot_dir + "/state.dat", data_s);
  std::vector<std::string> images;
  for (const auto& [stem, body] : pending)
    for (const auto& im : render_plot(plot_dir, stem, body)) images.push_back(im);
  return svg_links(images, "MQAR accuracy");
}

}  // namespace

std::string mqar_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir) {
  const auto g = collect(rows);
  std::string md = fmt::format(
      "## Accuracy against the number of key-value pairs\n\n"
      "Test accuracy over the queries (mean ± sd over seeds; ✓ at >= 90%), each cell at the "
      "learning rate its seed-0 sweep scored best on the validation stream. Value guess: the "
      "expected accuracy of a model that knows which values the string holds but not their keys, "
      "and answers with the most frequent (E[largest multiplicity] / P over {0} values, exact); "
      "guessing among all values scores 1/{0}.\n\n",
      kMqarValues);
  md += pivot_table(g);
  md +=
      "\n## Every cell\n\nState: the recurrent state per sequence after T tokens "
      "(softmax attention: its KV cache). ← marks the chosen rate. Test accuracy: mean ± sd "
      "[95% t interval] over the seeds at that rate.\n\n";
  md += detail_table(g);
  md += differences(g);
  md += trends(g);
  md += "\n" + seeds_note(count_seeds(rows)) + "\n";
  if (!plot_dir.empty()) {
    const auto body = plots(g, plot_dir);
    if (!body.empty()) md += "\n## Plots\n\n" + body;
  }
  return md;
}

}  // namespace seqlab
