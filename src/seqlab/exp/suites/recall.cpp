// Suite `recall`: remembering and retrieving — multi-query associative recall (Arora et al.
// 2023, "Zoology"), flip-flop language modelling (Liu et al. 2023) and copying (Jelassi et al.
// 2024, "Repeat After Me").
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"

#include <fmt/format.h>

namespace seqlab {

SuiteSpec recall_suite(bool quick) {
  SuiteSpec s;
  s.name = "recall";
  s.description =
      "MQAR at fixed length over widths (cells mqar_tied_*, since 2026-12-02: the tied tag head, "
      "class v read by token v's embedding row, lr 1e-3; cells mqar_T64_*, before: an untied "
      "Linear head, lr 3e-3); flip-flop trained on FFL(0.8) and tested on FFL(0.8), "
      "sparse FFL(0.98) and dense FFL(0.1); copying trained on n <= 20 and tested longer.";
  s.claims =
      "- Arora et al. (2023), Fig. 2: attention solves MQAR at every width tested; gated "
      "convolutions and recurrent models need width growing with the number of key-value pairs.\n"
      "- Liu et al. (2023): 1-layer LSTMs extrapolate perfectly on flip-flop; Transformers make "
      "rare but persistent errors, most on the sparse (long-range) distribution.\n"
      "- Jelassi et al. (2024): Transformers learn to copy with far less training and generalise "
      "to longer strings than state-space models, whose fixed state caps the copyable length.";
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  const int64_t steps = quick ? 1500 : 5000;
  // Training lengths start at each task's minimum (0): at a fixed length 64, flip-flop's sparse
  // reads gave every architecture a flat loss of ln 2 for 1500 steps, while the same LSTM trained
  // on lengths 3-64 reached 100% (measured; see docs/RESULTS.md).
  const std::vector<std::string> archs =
      quick ? std::vector<std::string>{"softmax", "elu1", "lstm", "mamba"}
            : std::vector<std::string>{"softmax", "elu1", "t2r", "hedgehog",
                                       "lstm",    "gru",  "s4d", "mamba"};
  const std::vector<int64_t> widths =
      quick ? std::vector<int64_t>{64} : std::vector<int64_t>{32, 64, 128};
  for (const auto& arch : archs)
    for (auto w : widths)
      for (auto seed : seeds) {
        // MQAR reads its answer with the tied tag head at lr 1e-3. With an untied Linear head
        // (the cells named mqar_T64_*, run before this change) softmax attention stayed at the
        // value guess for 20000 steps, and with the tied head it did at lr 3e-3; an independent
        // PyTorch model behaves the same (docs/results/recall-mqar-diagnostics/README.md).
        s.cells.push_back(make_cell(fmt::format("mqar_tied_T64_{}_d{}_s{}", arch, w, seed),
                                    grid_model(arch, w, 2, 64, {{"tie_tag_head", true}}),
                                    grid_task("mqar", 0, 64, {{"vocab", 128}, {"n_pairs", 8}}),
                                    grid_train(steps, 32, 1e-3, seed), {64}, 256, {{"width", w}}));
        auto ff = make_cell(fmt::format("flip_flop_{}_d{}_s{}", arch, w, seed),
                            grid_model(arch, w, arch == "lstm" ? 1 : 2, 512),
                            grid_task("flip_flop", 0, 64), grid_train(steps, 32, 3e-3, seed),
                            {64, 256, 512}, 256, {{"width", w}});
        ff["test_tasks"] = {"flip_flop", "flip_flop_sparse", "flip_flop_dense"};
        s.cells.push_back(ff);
        s.cells.push_back(
            make_cell(fmt::format("copy_{}_d{}_s{}", arch, w, seed), grid_model(arch, w, 2, 160),
                      grid_task("copy", 2, 40, {{"vocab", 8}}), grid_train(steps, 32, 3e-3, seed),
                      {40, 80, 160}, 128, {{"width", w}}));
      }
  return s;
}

}  // namespace seqlab
