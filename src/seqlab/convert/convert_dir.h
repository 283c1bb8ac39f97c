// `seqlab convert` as one library call, from a model directory to another: what the CLI
// (tools/cmd_convert.cpp) and the Python module (python/, seqlab.convert) both run, so that both
// check the same things, in the same order, with the same messages.
#pragma once

#include "seqlab/convert/convert.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace seqlab {

class DataParallel;

struct ConvertOutcome {
  nlohmann::json convert;             // the "convert" section written into out's config.json
  std::vector<double> before, after;  // attention transfer: per-layer losses (rank 0; else empty)
  std::string arch;                   // the student's mixer, as `seqlab archs` labels it
  int64_t parameters = 0;             // the student's parameter count
  bool written = false;               // this process wrote `out` (rank 0 or no data parallelism)
};

// Converts the softmax model in `model` (cfg.to: a feature map or hybrid), runs attention
// transfer when cfg.distill_steps > 0, and writes the student to `out` with the teacher's task
// section and a "convert" section. Errors (seqlab::Error): an invalid cfg, an `out` that already
// holds a model, a teacher that is not a causal softmax model or has unmerged adapters, a hybrid
// window longer than the teacher's training context, attention transfer without a task.
// With dp set, this process is one rank of a data-parallel attention transfer: rank 0 reads the
// teacher and hands it to the others (configs through the store, weights by broadcast), and only
// rank 0 writes `out`.
ConvertOutcome convert_model_dir(const std::string& model, const std::string& out,
                                 const ConvertConfig& cfg, DataParallel* dp = nullptr);

}  // namespace seqlab
