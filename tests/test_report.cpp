#include "seqlab/exp/report.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {
nlohmann::json row(const std::string& arch, uint64_t seed, int64_t L, double acc,
                   double scale = 0) {
  nlohmann::json r = {{"task", "parity"}, {"arch", arch},   {"d_model", 32},
                      {"n_layer", 1},     {"seed", seed},   {"train_length", 40},
                      {"test_length", L}, {"accuracy", acc}};
  if (scale) r["saturation_scale"] = scale;
  return r;
}
}  // namespace

TEST(Report, MeanOverSeedsBestInParenthesesAndSuccessMark) {
  auto md =
      report_tables({row("lstm", 0, 40, 1.0), row("lstm", 1, 40, 0.9), row("lstm", 0, 80, 0.5),
                     row("lstm", 1, 80, 0.7), row("softmax", 0, 40, 0.55)});
  EXPECT_NE(md.find("| lstm | 32 | 1 | 2 | 40 | 0.950 (1.000) ✓ | 0.600 (0.700) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| softmax | 32 | 1 | 1 | 40 | 0.550 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("Saturation"), std::string::npos);
}

TEST(Report, SaturationRowsGetTheirOwnTable) {
  auto md = report_tables({row("lstm", 0, 40, 1.0), row("lstm", 0, 40, 0.4, 8)});
  EXPECT_NE(md.find("Saturation"), std::string::npos) << md;
  EXPECT_NE(md.find("| lstm | 32 | 8 | 1 | 0.400 |"), std::string::npos) << md;
}

TEST(Report, AcceptedGetsItsOwnTable) {
  auto r = row("lstm", 0, 42, 1.0);
  r["accepted"] = 0.0;
  auto md = report_tables({r});
  EXPECT_NE(md.find("Accepted:"), std::string::npos) << md;
  EXPECT_NE(md.find("| lstm | 32 | 1 | 1 | 40 | 0.000 |"), std::string::npos) << md;
}
