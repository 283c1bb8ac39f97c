// Suite `chomsky`: length generalisation on the tasks of Deletang et al. (ICLR 2023), "Neural
// Networks and the Chomsky Hierarchy": trained on input lengths n = 1..40, tested beyond.
// Lengths here are stream lengths T; each task's entry gives T as a function of n.
#include "seqlab/exp/suites/chomsky.h"

#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"

#include <fmt/format.h>

namespace seqlab {

std::optional<int64_t> ChomskyTask::input_length(int64_t T) const {
  if (T < offset + scale * min_n || (T - offset) % scale != 0) return std::nullopt;
  return (T - offset) / scale;
}

const std::vector<ChomskyTask>& chomsky_tasks() {
  static const std::vector<ChomskyTask> tasks = {
      {"parity", "R", 1, 0, 1},
      {"even_pairs", "R", 1, 2, 1},
      {"cycle_navigation", "R", 1, 2, 1},
      {"modular_arithmetic", "R", 1, 2, 1},
      {"reverse_string", "DCF", 2, 1, 1},
      {"stack_manipulation", "DCF", 2, 2, 2},
      {"duplicate_string", "CS", 3, 1, 1},
      {"bucket_sort", "CS", 2, 1, 1},
  };
  return tasks;
}

std::vector<int64_t> chomsky_score_lengths() {
  std::vector<int64_t> n = {kChomskyTrainN + 1};
  for (int64_t v = 60; v <= kChomskyScoreMaxN; v += 20) n.push_back(v);
  return n;
}

std::vector<double> chomsky_score_weights() {
  const auto n = chomsky_score_lengths();
  std::vector<double> w(n.size(), 0.0);
  for (size_t i = 0; i + 1 < n.size(); ++i) {
    const double half = static_cast<double>(n[i + 1] - n[i]) / 2;
    w[i] += half;
    w[i + 1] += half;
  }
  const double total = static_cast<double>(n.back() - n.front());
  for (auto& x : w) x /= total;
  return w;
}

bool chomsky_table_length(int64_t n) {
  return n == 40 || n == 100 || n == 200 || n == 500;
}

SuiteSpec chomsky_suite(bool quick) {
  SuiteSpec s;
  s.name = "chomsky";
  s.description =
      "Trained on input lengths n <= 40 and tested beyond: regular (parity, even_pairs, "
      "cycle_navigation, modular_arithmetic), deterministic context-free (reverse_string, "
      "stack_manipulation) and context-sensitive (duplicate_string, bucket_sort) tasks. Test "
      "lengths in the tables are stream lengths T. Full grids since 2026-12-06 test n = 40, 41 and "
      "every 20th n to 500, and are scored as the paper does (mean accuracy over n = 41-500); "
      "quick: n = 40, 100, 200.";
  s.claims =
      "- Deletang et al. (2023), Table 2: RNNs and LSTMs generalise on the regular tasks (LSTM "
      "also on some counting tasks); Transformers fail to generalise in length even on regular "
      "tasks such as parity and even pairs (~50% on parity); no architecture without an external "
      "memory solves the DCF and CS tasks (reverse, duplicate) beyond the training length, "
      "though LSTMs do solve bucket sort.";
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"lstm", "softmax", "t2r"}
            : std::vector<std::string>{"lstm", "gru", "elman", "qrnn", "softmax",
                                       "elu1", "t2r", "s4d",   "mamba"};
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  const int64_t steps = quick ? 1500 : 5000, width = quick ? 32 : 64;
  // Full: n = 40 (in range), then the paper's range 41..500 sampled every 20th length; 512 test
  // sequences at the lengths the tables show (40, 100, 200, 500), 128 at the others.
  std::vector<int64_t> test_n = {40, 100, 200};
  if (!quick) {
    test_n = {kChomskyTrainN};
    for (auto n : chomsky_score_lengths()) test_n.push_back(n);
  }
  for (const auto& t : chomsky_tasks()) {
    std::vector<int64_t> test, sizes;
    for (auto n : test_n) {
      test.push_back(t.stream_length(n));
      sizes.push_back(chomsky_table_length(n) ? 512 : 128);
    }
    for (const auto& arch : archs)
      for (auto seed : seeds) {
        const std::string id = fmt::format("{}_{}_d{}_s{}", t.task, arch, width, seed);
        auto cell = make_cell(id, grid_model(arch, width, arch == "lstm" ? 1 : 2, test.back()),
                              grid_task(t.task, t.stream_length(t.min_n), t.stream_length(40)),
                              grid_train(steps, 32, 3e-3, seed), test, quick ? 128 : 512,
                              {{"width", width}});
        if (!quick) cell["eval_sizes"] = sizes;
        s.cells.push_back(cell);
      }
  }
  s.custom_report = chomsky_report;
  return s;
}

}  // namespace seqlab
