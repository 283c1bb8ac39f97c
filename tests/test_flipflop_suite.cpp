// Suite `flipflop` (exp/suites/flipflop.cpp): its grid (20 seeds per model, per-length test set
// sizes) and its report on hand-made rows: error rates per seed, error-free seeds counted, and
// Welch's interval of the difference between the models.
#include "seqlab/exp/cells/plain.h"
#include "seqlab/exp/suites/suites.h"

#include <gtest/gtest.h>

namespace seqlab {
namespace {

nlohmann::json row(const std::string& mixer, int64_t layers, uint64_t seed, const std::string& task,
                   int64_t length, double accuracy, int64_t n) {
  PlainRow r;
  r.task = task;
  r.train_task = "flip_flop";
  r.arch = r.mixer = mixer;
  r.d_model = 64;
  r.n_layer = layers;
  r.seed = seed;
  r.steps = 2000;
  r.train_min_length = 0;
  r.train_length = 64;
  r.test_length = length;
  r.accuracy = accuracy;
  r.seq_accuracy = accuracy;
  r.n = n;
  r.cell = "ff";
  return r.to_json();
}

TEST(FlipflopSuite, TwentySeedsPerModelAndLargerTestSetsAtTheTrainingLength) {
  auto spec = make_suite("flipflop", false);
  ASSERT_EQ(spec.cells.size(), 40u);
  const auto& c = spec.cells.front();
  EXPECT_EQ(c.at("test_lengths"), nlohmann::json::parse("[64, 512]"));
  EXPECT_EQ(c.at("eval_sizes"), nlohmann::json::parse("[4000, 500]"));
  EXPECT_EQ(c.at("test_tasks").size(), 3u);
  EXPECT_EQ(spec.cells.back().at("id"), "ff_softmax_s19");
}

TEST(FlipflopSuite, ReportCountsErrorFreeSeedsAndComparesTheModels) {
  std::vector<nlohmann::json> rows;
  const std::vector<double> tf = {0.999, 0.998, 0.9995};
  for (uint64_t s = 0; s < 3; ++s) {
    rows.push_back(row("lstm", 1, s, "flip_flop_sparse", 64, 1.0, 2000));
    rows.push_back(row("softmax", 2, s, "flip_flop_sparse", 64, tf[s], 2000 + s));
  }
  auto spec = make_suite("flipflop", true);
  const auto md = spec.custom_report(rows, "");
  // LSTM: every seed error-free.
  EXPECT_NE(md.find("| LSTM, 1 layer | sparse FFL(0.98) | 64 | 3 | 2000 | 0.00e+00 ± 0.00e+00 | "
                    "0.00e+00 | 0.00e+00 | 3 of 3 |"),
            std::string::npos)
      << md;
  // Transformer: errors 1e-3, 2e-3, 5e-4: mean 1.17e-3, median 1e-3, worst 2e-3, none error-free;
  // the smallest test set over seeds is reported.
  EXPECT_NE(md.find("| Transformer, 2 layers | sparse FFL(0.98) | 64 | 3 | 2000 | 1.17e-03 ± "
                    "7.64e-04 | 1.00e-03 | 2.00e-03 | 0 of 3 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- sparse FFL(0.98) at 64: +0.0012 [-0.0007, +0.0031], Welch 95%, n = 3 vs 3"),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace seqlab
