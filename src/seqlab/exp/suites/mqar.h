// The `mqar` suite's grid constants and its report: multi-query associative recall as Zoology
// (Arora et al. 2023) measures it, accuracy against the number of key-value pairs and against the
// model's state size, with the learning rate swept per cell and chosen on validation data.
//
// Grid: for every (architecture, width, pairs P) the seed-0 cells sweep the learning rates
// (cells mqar_P<P>_<arch>_d<w>_lr<lr>_s0, tagged sweep); seeds 1.. train at the rate whose seed-0
// cell scored the best validation accuracy (cells mqar_P<P>_<arch>_d<w>_s<seed>, "lr_from" those
// cells, exp/cells/plain.h). The reported accuracy is on the test stream, at that rate, over
// every seed; the validation stream only chooses.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab {

// The grid's vocabulary: 128 keys and 128 values (the task's K = V / 2).
inline constexpr int64_t kMqarVocab = 256;
inline constexpr int64_t kMqarValues = kMqarVocab / 2;

// Stream length of a grid cell with P pairs: P keys, P values and at least 2P queries, never
// below 64 tokens (Zoology's shortest).
inline int64_t mqar_length(int64_t pairs) {
  return pairs * 4 > 64 ? pairs * 4 : 64;
}

// The report: the value guess per P (tasks/mqar.h) under the test accuracies; per (architecture,
// width, pairs) the chosen learning rate and each rate's validation accuracy, the test accuracy
// over seeds (mean ± sd [95% t]), the state size; the architectures compared at each P at the
// largest width (Welch); plots of accuracy against P per width and against state size per P
// (plot_dir empty: no plots).
std::string mqar_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

}  // namespace seqlab
