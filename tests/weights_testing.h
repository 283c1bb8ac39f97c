// Comparing two checkpoints' weights in tests: the worst per-tensor difference and where it is.
#pragma once

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

namespace seqlab::testing {

// A model directory's weights.
inline TensorMap checkpoint_weights(const std::string& dir) {
  return load_safetensors((std::filesystem::path(dir) / kWeightsFile).string()).tensors;
}

struct WeightDiff {
  double value = 0;    // the largest |a - b|, relative to its tensor's scale
  std::string tensor;  // the tensor it is in ("" when the maps are empty)
};

// The attention key bias adds q.b_k to every score of a row, which softmax ignores: its true
// gradient is 0, the computed one fp32 noise of either sign, and AdamW turns that noise into
// full-size steps (m / sqrt(v) ~ +-1). It moves differently in any two runs whose sums are
// ordered differently, without changing what the model computes, so comparisons leave it out.
inline bool gradient_free(const std::string& name) {
  return name.find("mixer.k.bias") != std::string::npos;
}

// The largest difference over the tensors, each relative to its tensor's scale (max |a|, at least
// 1e-3), with its tensor's name for the failure message. Tensors `skip` accepts are left out; a
// tensor missing from b fails the test.
inline WeightDiff worst_weight_diff(const TensorMap& a, const TensorMap& b,
                                    const std::function<bool(const std::string&)>& skip = {}) {
  WeightDiff worst;
  EXPECT_EQ(a.size(), b.size());
  for (auto& [k, v] : a) {
    if (skip && skip(k)) continue;
    auto it = b.find(k);
    if (it == b.end()) {
      ADD_FAILURE() << k << " is missing from the second checkpoint";
      continue;
    }
    const double scale = std::max(1e-3, v.abs().max().item<double>());
    const double d = (v - it->second).abs().max().item<double>() / scale;
    if (d >= worst.value) worst = {d, k};
  }
  return worst;
}

// How far apart two runs from the same start ended, relative to how far they moved:
// |a - b| / |a - start|, Frobenius norms over all the tensors `skip` does not reject. Two runs
// that take the same steps differ only by fp32 rounding (well under 1e-3 after a few AdamW steps,
// where a coordinate whose gradient is near zero can still flip its step); runs that take
// different steps differ by a sizeable share of their movement.
inline double relative_drift(const TensorMap& a, const TensorMap& b, const TensorMap& start,
                             const std::function<bool(const std::string&)>& skip = {}) {
  double apart = 0, moved = 0;
  for (auto& [k, v] : a) {
    if (skip && skip(k)) continue;
    apart += (v - b.at(k)).to(torch::kDouble).pow(2).sum().item<double>();
    moved += (v - start.at(k)).to(torch::kDouble).pow(2).sum().item<double>();
  }
  EXPECT_GT(moved, 0) << "the runs did not move from their start";
  return std::sqrt(apart / std::max(moved, 1e-300));
}

}  // namespace seqlab::testing
