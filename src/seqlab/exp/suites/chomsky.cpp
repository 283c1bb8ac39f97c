// Suite `chomsky`: length generalisation on the tasks of Deletang et al. (ICLR 2023), "Neural
// Networks and the Chomsky Hierarchy": trained on input lengths n = 1..40, tested beyond.
// Lengths here are stream lengths T; each task's header gives T as a function of n.
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"

#include <fmt/format.h>

#include <functional>

namespace seqlab {

SuiteSpec chomsky_suite(bool quick) {
  SuiteSpec s;
  s.name = "chomsky";
  s.description =
      "Trained on input lengths n <= 40, tested at n = 40, 100, 200 (full: also 500): regular "
      "(parity, even_pairs, cycle_navigation, modular_arithmetic), deterministic context-free "
      "(reverse_string, stack_manipulation) and context-sensitive (duplicate_string, "
      "bucket_sort) tasks. Test lengths in the tables are stream lengths T.";
  s.claims =
      "- Deletang et al. (2023), Table 2: RNNs and LSTMs generalise on the regular tasks (LSTM "
      "also on some counting tasks); Transformers fail to generalise in length even on regular "
      "tasks such as parity and even pairs (~50% on parity); no architecture without an external "
      "memory solves the DCF and CS tasks (reverse, duplicate) beyond the training length, "
      "though LSTMs do solve bucket sort.";
  struct T {
    std::string task;
    std::function<int64_t(int64_t)> len;  // input length n -> stream length T
    int64_t min_n;
  };
  const std::vector<T> tasks = {
      {"parity", [](int64_t n) { return n; }, 1},
      {"even_pairs", [](int64_t n) { return n + 2; }, 1},
      {"cycle_navigation", [](int64_t n) { return n + 2; }, 1},
      {"modular_arithmetic", [](int64_t n) { return n + 2; }, 1},
      {"reverse_string", [](int64_t n) { return 2 * n + 1; }, 1},
      {"stack_manipulation", [](int64_t n) { return 2 * n + 2; }, 2},
      {"duplicate_string", [](int64_t n) { return 3 * n + 1; }, 1},
      {"bucket_sort", [](int64_t n) { return 2 * n + 1; }, 1},
  };
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"lstm", "softmax", "t2r"}
            : std::vector<std::string>{"lstm", "gru", "elman", "qrnn", "softmax",
                                       "elu1", "t2r", "s4d",   "mamba"};
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  const std::vector<int64_t> test_n =
      quick ? std::vector<int64_t>{40, 100, 200} : std::vector<int64_t>{40, 100, 200, 500};
  const int64_t steps = quick ? 1500 : 5000, width = quick ? 32 : 64;
  for (const auto& t : tasks) {
    std::vector<int64_t> test;
    for (auto n : test_n) test.push_back(t.len(n));
    for (const auto& arch : archs)
      for (auto seed : seeds) {
        const std::string id = fmt::format("{}_{}_d{}_s{}", t.task, arch, width, seed);
        s.cells.push_back(make_cell(
            id, grid_model(arch, width, arch == "lstm" ? 1 : 2, test.back()),
            grid_task(t.task, t.len(t.min_n), t.len(40)), grid_train(steps, 32, 3e-3, seed), test,
            quick ? 128 : 512, {{"width", width}}));
      }
  }
  return s;
}

}  // namespace seqlab
