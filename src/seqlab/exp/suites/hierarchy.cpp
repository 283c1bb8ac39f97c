// Suite `hierarchy`: the empirical side of Merrill et al. (ACL 2020), "A Formal Hierarchy of RNN
// Architectures". Counting languages for LSTM, GRU, QRNN and Elman RNNs (and, in the full grid,
// attention for reference); then the saturation test: the trained mixer's weight matrices are
// multiplied by a growing factor, approaching the saturated network the theory is about.
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"

#include <fmt/format.h>

namespace seqlab {

SuiteSpec hierarchy_suite(bool quick) {
  SuiteSpec s;
  s.name = "hierarchy";
  s.description =
      "Counting languages (l5, a^n b^n Σ*, a^n b^n, a^n b^n c^n) for LSTM / GRU / QRNN / Elman, "
      "trained on short strings and tested on longer ones, plus saturation. Full grids since "
      "2026-12-06 also test at T = 1024 and 2048 (128 sequences there, 512 at the others).";
  s.claims =
      "- Merrill et al. (2020), Thm. / Table 1: saturated LSTMs are counter machines and can "
      "recognise L5-style counting languages and a^n b^n Σ*; saturated GRUs, QRNNs and Elman RNNs "
      "are finite-state and cannot.\n"
      "- Their experiment (Sec. 7, Fig. 3): an LSTM learns a^n b^n Σ* and generalises past the "
      "training lengths, a QRNN does not; stacking QRNN layers (or adding pooling) changes what "
      "QRNNs can express.\n"
      "- Earlier: LSTMs learn a^n b^n and a^n b^n c^n as next-symbol prediction and accept "
      "strings well beyond the training n (Gers & Schmidhuber 2001; Weiss et al. 2018).";
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"lstm", "gru", "qrnn", "elman"}
            : std::vector<std::string>{"lstm", "gru", "qrnn", "elman", "softmax"};
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  const int64_t steps = quick ? 1500 : 4000, width = quick ? 32 : 64;
  struct T {
    std::string task;
    int64_t min_len, max_len;
    std::vector<int64_t> test;
    bool saturate;
  };
  const std::vector<T> tasks = {
      {"l5", 2, 64, {64, 128, 256}, true},
      {"anbn_prefix", 2, 64, {64, 128, 256}, true},
      {"anbn", 4, 42, {42, 82, 162}, false},     // T = 2n + 2: n = 20, 40, 80
      {"anbncn", 5, 62, {62, 122, 242}, false},  // T = 3n + 2: n = 20, 40, 80
  };
  // Full: the lengths above, then 1024 and 2048 with fewer test sequences (each is 4-8x longer).
  const auto lengths = [&](std::vector<int64_t> test) {
    if (!quick) test.insert(test.end(), {1024, 2048});
    return test;
  };
  const auto finish = [&](nlohmann::json cell) {
    if (!quick) {
      const size_t n_test = cell["test_lengths"].size();
      std::vector<int64_t> sizes(n_test, 512);
      sizes[n_test - 2] = sizes[n_test - 1] = 128;
      cell["eval_sizes"] = sizes;
    }
    return cell;
  };
  const int64_t context = quick ? 512 : 2048;
  for (const auto& t : tasks)
    for (const auto& arch : archs)
      for (auto seed : seeds) {
        const std::string id = fmt::format("{}_{}_d{}_s{}", t.task, arch, width, seed);
        auto cell =
            make_cell(id, grid_model(arch, width, 1, context),
                      grid_task(t.task, t.min_len, t.max_len), grid_train(steps, 32, 3e-3, seed),
                      lengths(t.test), quick ? 128 : 512, {{"width", width}});
        if (t.saturate) cell["saturation"] = std::vector<double>{2, 8, 32};
        s.cells.push_back(finish(cell));
      }
  // Stacking: a 2-layer QRNN beside the 1-layer one (Merrill et al. Sec. 6).
  for (const auto& task : {"anbn_prefix"})
    for (auto seed : seeds)
      s.cells.push_back(finish(make_cell(
          fmt::format("{}_qrnn2_d{}_s{}", task, width, seed), grid_model("qrnn", width, 2, context),
          grid_task(task, 2, 64), grid_train(steps, 32, 3e-3, seed), lengths({64, 128, 256}),
          quick ? 128 : 512, {{"width", width}})));
  return s;
}

}  // namespace seqlab
