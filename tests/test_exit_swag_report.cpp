// The exit_swag report when its models ran different numbers of seeds: the header says so, each
// section states its own count, and "last exit − first exit" pairs the exits by seed.
#include "seqlab/exp/suites/suites.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

nlohmann::json curve(const std::string& label, uint64_t seed, double threshold, double acc,
                     double layers) {
  return {
      {"kind", "exit_curve"},    {"label", label},        {"seed", seed}, {"threshold", threshold},
      {"accuracy", acc},         {"mean_layers", layers}, {"n_layer", 4}, {"examples_per_s", 100.0},
      {"has_difficulty", false}, {"arch", "softmax"},     {"task", "t"},  {"d_model", 64}};
}

nlohmann::json calibration(const std::string& label, uint64_t seed, int64_t exit, double acc) {
  return {{"kind", "exit_calibration"}, {"label", label},  {"seed", seed},       {"exit", exit},
          {"layer", exit + 1},          {"accuracy", acc}, {"temperature", 1.0}, {"n_layer", 4},
          {"arch", "softmax"},          {"task", "t"}};
}

}  // namespace

TEST(ExitSwagReport, MixedSeedCountsAndTheLastMinusFirstPairing) {
  std::vector<nlohmann::json> rows;
  // "one": seed 0 only. "three": seeds 0-2, last exit ahead of the first by 0.1, 0.2, 0.3.
  rows.push_back(curve("one", 0, 2.0, 0.5, 4.0));
  rows.push_back(calibration("one", 0, 0, 0.5));
  rows.push_back(calibration("one", 0, 2, 0.5));
  for (uint64_t s = 0; s < 3; ++s) {
    rows.push_back(curve("three", s, 0.5, 0.695, 2.0));
    rows.push_back(curve("three", s, 2.0, 0.7, 4.0));
    rows.push_back(calibration("three", s, 0, 0.5));
    rows.push_back(calibration("three", s, 2, 0.5 + 0.1 * static_cast<double>(s + 1)));
  }
  const auto md = exit_swag_suite(true).custom_report(rows, "");
  EXPECT_NE(md.find("The models ran different numbers of seeds; each section below says how many."),
            std::string::npos)
      << md;
  const auto one = md.find("### one"), three = md.find("### three");
  ASSERT_NE(one, std::string::npos);
  ASSERT_NE(three, std::string::npos);
  EXPECT_NE(md.find("This model: ", one), std::string::npos);
  EXPECT_NE(md.find("This model: ", three), std::string::npos);
  // Paired by seed: +0.1, +0.2, +0.3, mean 0.2, sd 0.1.
  EXPECT_NE(md.find("Last exit − first exit, test accuracy: 0.2000 ± 0.1000 ["), std::string::npos)
      << md;
  EXPECT_NE(md.find("(seed 0: +0.1000, seed 1: +0.2000, seed 2: +0.3000)"), std::string::npos)
      << md;
  // The single-seed model's gain is its one value, with no interval.
  EXPECT_NE(md.find("Last exit − first exit, test accuracy: 0.0000 (seed 0: +0.0000)"),
            std::string::npos)
      << md;
  // Halving the layers at no loss meets the early-exit target for "three".
  EXPECT_NE(md.find("best 2.00x at threshold 0.50 — met ✓"), std::string::npos) << md;
}
