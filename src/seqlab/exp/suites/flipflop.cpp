// Suite `flipflop`: the error rate of flip-flop language modelling over many seeds, on a log
// scale (Liu et al. 2023, "Exposing Attention Glitches with Flip-Flop Language Modeling"; issue
// 36 §2). A 1-layer LSTM and a 2-layer softmax Transformer, 20 seeds each, trained on FFL(0.8)
// strings of 3..64 tokens and tested on FFL(0.8), sparse FFL(0.98) and dense FFL(0.1) at the
// training length (many strings, so rare glitches show) and at 8x it. The report gives each
// seed's error rate on the read bits, their mean ± sd, median and worst, how many seeds made no
// error at all, and a log-scale plot of every seed.
#include "seqlab/exp/cells/plain.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/stats.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"

#include "seqlab/core/atomic_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace seqlab {

namespace {

const std::vector<std::string> kTests = {"flip_flop", "flip_flop_sparse", "flip_flop_dense"};

std::string test_name(const std::string& t) {
  return t == "flip_flop"          ? "FFL(0.8)"
         : t == "flip_flop_sparse" ? "sparse FFL(0.98)"
                                   : "dense FFL(0.1)";
}

std::string arch_name(const PlainRow& r) {
  return r.mixer == "lstm" ? fmt::format("LSTM, {} layer", r.n_layer)
                           : fmt::format("Transformer, {} layers", r.n_layer);
}

// Error rates (1 - accuracy on the read bits) per seed, by (arch, test task, length).
using Key = std::tuple<std::string, std::string, int64_t>;
struct Sample {
  std::vector<double> errors;
  int64_t scored = 0;  // read bits per seed (the smallest over seeds)
};

std::map<Key, Sample> samples(const std::vector<PlainRow>& rows) {
  std::map<Key, Sample> out;
  for (const auto& r : rows) {
    auto& s = out[{arch_name(r), r.task, r.test_length}];
    s.errors.push_back(1.0 - r.accuracy);
    s.scored = s.scored == 0 ? r.n : std::min(s.scored, r.n);
  }
  return out;
}

std::string table(const std::map<Key, Sample>& by, const std::vector<std::string>& archs,
                  const std::vector<int64_t>& lengths) {
  std::string md = md_header({"model", "test", "length", "seeds", "read bits per seed",
                              "error rate, mean ± sd", "median", "worst", "seeds with no error"},
                             "llrrrrrrr");
  for (const auto& a : archs)
    for (const auto& t : kTests)
      for (auto L : lengths) {
        auto it = by.find({a, t, L});
        if (it == by.end()) continue;
        auto e = it->second.errors;
        std::sort(e.begin(), e.end());
        const auto s = sample_stats(e);
        const auto zero = std::count(e.begin(), e.end(), 0.0);
        const double median =
            e.size() % 2 ? e[e.size() / 2] : (e[e.size() / 2 - 1] + e[e.size() / 2]) / 2;
        md += md_row({a, test_name(t), std::to_string(L), std::to_string(e.size()),
                      std::to_string(it->second.scored),
                      fmt::format("{:.2e} ± {:.2e}", s.mean, s.sd), fmt::format("{:.2e}", median),
                      fmt::format("{:.2e}", e.back()), fmt::format("{} of {}", zero, e.size())});
      }
  return md;
}

// Transformer minus LSTM error rate per test, with Welch's interval.
std::string differences(const std::map<Key, Sample>& by, const std::vector<std::string>& archs,
                        const std::vector<int64_t>& lengths) {
  if (archs.size() != 2) return "";
  std::string md = "\nDifferences (" + archs[1] + " − " + archs[0] + ", error rate):\n\n";
  for (const auto& t : kTests)
    for (auto L : lengths) {
      auto a = by.find({archs[0], t, L}), b = by.find({archs[1], t, L});
      if (a == by.end() || b == by.end()) continue;
      md += fmt::format("- {} at {}: {}\n", test_name(t), L,
                        fmt_difference(welch_difference(b->second.errors, a->second.errors), 4));
    }
  return md;
}

// Every seed's error rate on a log axis, one column per (test, length), the models side by side;
// an error-free seed is drawn at half of one error in its test set (its resolution), hollow.
std::string strip_plot(const std::map<Key, Sample>& by, const std::vector<std::string>& archs,
                       const std::vector<int64_t>& lengths, const std::string& plot_dir) {
  std::string data, cmd, xtics;
  int col = 0;
  std::map<std::string, std::string> blocks, zero_blocks;
  for (const auto& t : kTests)
    for (auto L : lengths) {
      xtics += fmt::format("{}\"{} T={}\" {}", col ? ", " : "", test_name(t), L, col);
      for (size_t ai = 0; ai < archs.size(); ++ai) {
        auto it = by.find({archs[ai], t, L});
        if (it == by.end()) continue;
        const double x0 = col + (ai == 0 ? -0.15 : 0.15);
        const double floor = 0.5 / static_cast<double>(std::max<int64_t>(1, it->second.scored));
        for (size_t i = 0; i < it->second.errors.size(); ++i) {
          const double x = x0 + 0.01 * (static_cast<double>(i % 7) - 3);
          const double e = it->second.errors[i];
          (e > 0 ? blocks : zero_blocks)[archs[ai]] += fmt::format("{} {}\n", x, e > 0 ? e : floor);
        }
      }
      ++col;
    }
  size_t idx = 0;
  for (const auto& a : archs)
    for (int zero = 0; zero < 2; ++zero) {
      const auto& b = zero ? zero_blocks : blocks;
      if (!b.count(a)) continue;
      data += gp_block(a + (zero ? " (no error)" : ""), b.at(a));
      cmd += fmt::format("{}'flipflop.dat' index {} using 1:2 with points pt {} lc {} title '{}{}'",
                         gp_sep(idx), idx, zero ? 6 : 7, &a == &archs.front() ? 1 : 2, a,
                         zero ? ", no error (drawn at 0.5 / read bits)" : "");
      ++idx;
    }
  if (!idx) return "";
  write_file_atomic(plot_dir + "/flipflop.dat", data);
  return svg_links(
      render_plot(plot_dir, "flipflop_errors",
                  fmt::format("set title 'Flip-flop: error rate on the read bits, every seed'\n"
                              "set ylabel 'error rate'\nset logscale y\nset xtics ({}) "
                              "rotate by -30\nset xrange [-0.5:{}]\nset key below\nset grid y\n"
                              "plot {}\n",
                              xtics, col - 0.5, cmd)),
      "flip-flop error rates per seed");
}

std::string flipflop_report(const std::vector<nlohmann::json>& json, const std::string& plot_dir) {
  std::vector<PlainRow> rows;
  for (const auto& j : json) rows.push_back(PlainRow::from_json(j));
  std::vector<std::string> archs;
  std::vector<int64_t> lengths;
  for (const auto& r : rows) {
    if (std::find(archs.begin(), archs.end(), arch_name(r)) == archs.end())
      archs.push_back(arch_name(r));
    if (std::find(lengths.begin(), lengths.end(), r.test_length) == lengths.end())
      lengths.push_back(r.test_length);
  }
  std::sort(archs.begin(), archs.end());  // "LSTM..." before "Transformer..."
  std::sort(lengths.begin(), lengths.end());
  const auto by = samples(rows);
  std::string md = fmt::format(
      "## Error rates\n\nError rate = 1 − accuracy on the read bits (the only deterministic "
      "tokens), per seed; the table summarises over seeds. {}\n\n",
      rows.empty() ? ""
                   : fmt::format("Trained on FFL(0.8), lengths {}..{}, {} steps.",
                                 rows.front().train_min_length, rows.front().train_length,
                                 rows.front().steps));
  md += table(by, archs, lengths);
  md += differences(by, archs, lengths);
  md += "\n" + seeds_note(count_seeds(json)) + "\n";
  if (!plot_dir.empty()) md += "\n## Plot\n\n" + strip_plot(by, archs, lengths, plot_dir);
  return md;
}

}  // namespace

SuiteSpec flipflop_suite(bool quick) {
  SuiteSpec s;
  s.name = "flipflop";
  s.description =
      "flip-flop error rates over 20 seeds on a log scale: 1-layer LSTM vs Transformer, trained "
      "on FFL(0.8), tested on FFL(0.8), sparse FFL(0.98) and dense FFL(0.1).";
  s.claims =
      "- Liu et al. (2023): a 1-layer LSTM learns flip-flop perfectly (no error on any test "
      "distribution); Transformers trained to near-zero in-distribution error still make rare, "
      "persistent errors (\"attention glitches\"), most on the sparse distribution (long gaps "
      "between write and read), and their error rates spread over orders of magnitude across "
      "seeds (their Fig. 2, log scale).";
  const int64_t n_seeds = quick ? 2 : 20, steps = quick ? 200 : 2000, train_len = 64;
  const int64_t in_dist_n = quick ? 200 : 4000, long_n = quick ? 50 : 500;
  for (const std::string arch : {"lstm", "softmax"})
    for (int64_t seed = 0; seed < n_seeds; ++seed) {
      const auto model = grid_model(arch, 64, arch == "lstm" ? 1 : 2, 8 * train_len);
      const auto task = grid_task("flip_flop", 0, train_len);
      const auto train = grid_train(steps, 32, 3e-3, static_cast<uint64_t>(seed));
      // Many strings at the training length (glitches are rare), fewer at 8x it.
      auto c = make_cell(fmt::format("ff_{}_s{}", arch, seed), model, task, train,
                         {train_len, 8 * train_len}, in_dist_n);
      c["eval_sizes"] = {in_dist_n, long_n};
      c["test_tasks"] = kTests;
      s.cells.push_back(c);
    }
  s.custom_report = flipflop_report;
  return s;
}

}  // namespace seqlab
