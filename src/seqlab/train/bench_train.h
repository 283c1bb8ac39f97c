// seqlab bench train: training throughput, measured, not timed in tests.
//
//   architectures  tokens/s of whole training steps (forward, backward, AdamW update) of a small
//                  causal LM of each architecture on random tokens, batch B x T;
//   linear forms   forward + backward of one linear-attention mixer on random inputs [B,T,D],
//                  in its quadratic and chunked forms, at each T (the forms are equal functions:
//                  tests/test_linear_attention.cpp), with the chunked/quadratic speed ratio.
// Every number is a mean ± sd over repetitions, after one warm-up step, measured side by side in
// one process on the same thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab {

struct TrainBenchConfig {
  std::vector<std::string> archs = {"softmax", "t2r",  "hedgehog", "elu1", "lstm",
                                    "gru",     "qrnn", "s4d",      "mamba"};
  int64_t d_model = 64, n_layer = 2, batch = 8, length = 256, vocab = 257;
  std::vector<int64_t> form_lengths = {256, 1024, 4096};  // linear quadratic vs chunked
  std::string feature_map = "elu1";                       // of the linear-forms comparison
  int64_t form_batch = 1, steps = 3, reps = 3, threads = 1;
  uint64_t seed = 0;
  void validate() const;
};

struct TrainBenchRow {
  std::string kind;  // "arch" or "linear_form"
  std::string name;  // architecture, or "quadratic" / "chunked"
  int64_t length = 0, batch = 0;
  double tokens_per_s = 0, sd = 0;  // mean and standard deviation over reps
  double ratio = 0;                 // linear_form chunked rows: chunked / quadratic speed
};

std::vector<TrainBenchRow> run_train_bench(const TrainBenchConfig& cfg);

// md, csv or json.
std::string format_train_bench(const std::vector<TrainBenchRow>& rows, const std::string& format);

}  // namespace seqlab
