// The `chomsky` suite's tasks and its report: Deletang et al. (ICLR 2023) score a model by the
// per-token accuracy averaged over test input lengths n = 41..500 (their Table 2, the best of
// several seeds), not at a few fixed lengths.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace seqlab {

// One task of the grid: its stream length is T = scale * n + offset for input length n.
// (modular_arithmetic draws odd-length expressions only: at an even n it tests n - 1.)
struct ChomskyTask {
  std::string task;
  std::string tier;  // "R" (regular), "DCF" (deterministic context-free), "CS"
  int64_t scale = 1, offset = 0;
  int64_t min_n = 1;
  int64_t stream_length(int64_t n) const { return scale * n + offset; }
  // The input length n of a stream length T; none when T is not one of the task's lengths.
  std::optional<int64_t> input_length(int64_t T) const;
};

const std::vector<ChomskyTask>& chomsky_tasks();

// The paper's test range and the lengths the full grid samples from it: n = 41, then every
// 20th length from 60 to 500. The score of a cell is the mean over these of its accuracy.
constexpr int64_t kChomskyTrainN = 40, kChomskyScoreMaxN = 500;
std::vector<int64_t> chomsky_score_lengths();
// Each score length's weight (summing to 1): the trapezoid rule over n, so that the sampled
// lengths estimate the plain mean over every n from 41 to 500 (an end stands for half an interval).
std::vector<double> chomsky_score_weights();
// The input lengths the accuracy tables show (every grid has tested them; the full grid gives
// them 512 test sequences).
bool chomsky_table_length(int64_t n);

// The report: the paper's score (best seed, and mean over seeds with its interval) when the rows
// test every score length, then the accuracy tables at n = 40, 100, 200 and 500 and the plots of
// accuracy against every tested length (plot_dir empty: no plots).
std::string chomsky_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

}  // namespace seqlab
