// The `objectives` suite (exp/suites/objectives.cpp): its grid, and its report computed from
// hand-made rows whose means and standard deviations are known.
#include "seqlab/exp/suite.h"
#include "seqlab/methods/objectives.h"

#include <gtest/gtest.h>

#include <set>

namespace seqlab {
namespace {

TEST(ObjectivesSuite, GridCoversEveryArchitectureAndObjective) {
  for (bool quick : {true, false}) {
    auto s = make_suite("objectives", quick);
    std::set<std::pair<std::string, std::string>> pairs;
    std::set<std::string> ids;
    for (const auto& c : s.cells) {
      auto cfg = ObjectivesConfig::from_json(c.at("config"), "cell");
      EXPECT_NO_THROW(cfg.validate());
      pairs.insert({cfg.stack, cfg.objective});
      EXPECT_TRUE(ids.insert(c.at("id").get<std::string>()).second) << "duplicate id";
    }
    EXPECT_EQ(pairs.size(), 8u);
    EXPECT_EQ(s.cells.size(), quick ? 24u : 80u);
  }
}

nlohmann::json row(const std::string& stack, const std::string& objective, uint64_t seed,
                   const std::string& lang, const std::string& task, const std::string& mode,
                   double acc) {
  return {{"kind", "objectives"},   {"arch", "softmax"},   {"stack", stack},
          {"objective", objective}, {"seed", seed},        {"language", lang},
          {"task", task},           {"mode", mode},        {"accuracy", acc},
          {"d_model", 64},          {"n_layer", 4},        {"steps", 10},
          {"tokens_per_step", 512}, {"parameters", 1000},  {"pretrain_heldout_loss", 1.5},
          {"ft_train", 100},        {"probe_train", 1000}, {"test_size", 500}};
}

TEST(ObjectivesSuite, ReportMeansOverLanguagesThenSeeds) {
  std::vector<nlohmann::json> rows;
  // clm: seed 0 -> languages 0.8 and 1.0 (mean 0.9); seed 1 -> 0.7 and 0.9 (0.8). Mean 0.85, sd
  // 0.0707, 95% t interval 0.85 ± 12.706 * 0.05 = [0.215, 1.485]. clm_pairs: 0.97 everywhere.
  for (const auto& [task, mode] : std::vector<std::pair<std::string, std::string>>{
           {"pos", "probe"}, {"pos", "finetune"}, {"label", "probe"}, {"label", "finetune"}}) {
    rows.push_back(row("decoder", "clm", 0, "L0", task, mode, 0.8));
    rows.push_back(row("decoder", "clm", 0, "L1", task, mode, 1.0));
    rows.push_back(row("decoder", "clm", 1, "L0", task, mode, 0.7));
    rows.push_back(row("decoder", "clm", 1, "L1", task, mode, 0.9));
    for (uint64_t s : {0, 1})
      for (const char* l : {"L0", "L1"})
        rows.push_back(row("decoder", "clm_pairs", s, l, task, mode, 0.97));
  }
  auto spec = make_suite("objectives", true);
  const auto md = spec.custom_report(rows, "");
  EXPECT_NE(md.find("| decoder | clm | 1000 | 1.500 | 0.850 ± 0.071 [0.215, 1.485] |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| decoder | clm_pairs | 1000 | 1.500 | 0.970 ± 0.000 [0.970, 0.970] |"),
            std::string::npos)
      << md;
  // Per language: seeds averaged.
  EXPECT_NE(md.find("| decoder | clm | 0.750 | 0.950 |"), std::string::npos) << md;
  // The best decoder objective, and the translation comparison: +0.120 against se
  // sqrt(0.0707^2 / 2) = 0.05, so 2·se = 0.100 and the difference is "clear".
  EXPECT_NE(md.find("| decoder | clm_pairs (0.970) |"), std::string::npos) << md;
  EXPECT_NE(md.find("+0.120 (clear; 2·se = 0.100)"), std::string::npos) << md;
}

}  // namespace
}  // namespace seqlab
