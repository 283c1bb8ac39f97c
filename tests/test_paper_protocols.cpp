// The anchors' protocols (issue 36 §2). The chomsky suite's report: Deletang et al.'s score is the
// mean accuracy over the sampled test lengths 41..500, computed only for seeds that tested all of
// them; the tables keep n = 40, 100, 200, 500. The hierarchy grid tests to T = 2048.
#include "seqlab/exp/suites/chomsky.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/tasks/seq2seq.h"

#include "seqlab/exp/report.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

using namespace seqlab;

namespace {

// A reverse_string row (T = 2n + 1) at input length n.
nlohmann::json row(const std::string& arch, uint64_t seed, int64_t n, double acc) {
  return {{"task", "reverse_string"},
          {"arch", arch},
          {"d_model", 64},
          {"n_layer", 2},
          {"seed", seed},
          {"train_length", 81},
          {"test_length", 2 * n + 1},
          {"accuracy", acc},
          {"blind_accuracy", 0.5}};
}

}  // namespace

TEST(ChomskyReport, LengthsMapBothWays) {
  for (const auto& t : chomsky_tasks())
    for (int64_t n : {t.min_n, int64_t{41}, int64_t{500}})
      EXPECT_EQ(t.input_length(t.stream_length(n)), n) << t.task;
  const auto& rev = chomsky_tasks()[4];
  ASSERT_EQ(rev.task, "reverse_string");
  EXPECT_FALSE(rev.input_length(82).has_value());  // even: no n gives 2n + 1 = 82
  const auto n = chomsky_score_lengths();
  ASSERT_EQ(n.size(), 24u);
  EXPECT_EQ(n.front(), 41);
  EXPECT_EQ(n[1], 60);
  EXPECT_EQ(n.back(), 500);
}

TEST(ChomskyReport, TrapezoidWeightsSumToOneAndHalveTheEnds) {
  const auto w = chomsky_score_weights();
  ASSERT_EQ(w.size(), chomsky_score_lengths().size());
  double sum = 0;
  for (double x : w) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(w.front(), 9.5 / 459, 1e-12);  // 41 -> 60: half of 19
  EXPECT_NEAR(w[1], 19.5 / 459, 1e-12);      // 60: half of 19 + half of 20
  EXPECT_NEAR(w[2], 20.0 / 459, 1e-12);
  EXPECT_NEAR(w.back(), 10.0 / 459, 1e-12);
}

// Each task's table entry agrees with the task itself: its shortest stream and, for the seq2seq
// tasks, the input length the task reads from a stream length.
TEST(ChomskyReport, TaskTableMatchesTheTasks) {
  for (const auto& t : chomsky_tasks()) {
    SCOPED_TRACE(t.task);
    TaskConfig cfg;
    cfg.task = t.task;
    const auto task = make_task(cfg);
    EXPECT_EQ(task->min_length(), t.stream_length(t.min_n));
    const auto* s2s = dynamic_cast<const Seq2SeqTask*>(task.get());
    if (!s2s) continue;
    for (int64_t n : {int64_t{41}, int64_t{99}, int64_t{499}}) {
      EXPECT_EQ(s2s->stream_length(n), t.stream_length(n)) << n;
      EXPECT_EQ(s2s->input_length(t.stream_length(n)), n) << n;
    }
    // Odd-length expressions only: an even n is tested as n - 1 (chomsky.h says so).
    const int64_t even = t.task == "modular_arithmetic" ? 99 : 100;
    EXPECT_EQ(s2s->input_length(t.stream_length(100)), even);
  }
}

TEST(ChomskyReport, ScoreIsTheMeanOverScoreLengthsOfCompleteSeeds) {
  std::vector<nlohmann::json> rows;
  const auto lengths = chomsky_score_lengths();
  for (uint64_t s = 0; s < 3; ++s) {
    rows.push_back(row("lstm", s, 40, 1.0));  // in range: not part of the score
    for (size_t i = 0; i < lengths.size(); ++i) {
      // lstm: linear in n from 0.5 at n = 41 to 1.0 at 500, every seed. The trapezoid weights
      // are exact for a linear function: the mean over n = 41..500 is 0.75.
      const double n = static_cast<double>(lengths[i]);
      rows.push_back(row("lstm", s, lengths[i], 0.5 + 0.5 * (n - 41) / 459));
      rows.push_back(row("softmax", s, lengths[i], 0.5 + 0.01 * static_cast<double>(s)));
    }
  }
  // gru's one seed misses n = 500: it is not scored.
  for (size_t i = 0; i + 1 < lengths.size(); ++i) rows.push_back(row("gru", 0, lengths[i], 1.0));
  const auto md = chomsky_report(rows, "");
  EXPECT_NE(md.find("| reverse_string | DCF | 0.750 | 0.520 |  | *0.500* |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| reverse_string | DCF | 0.750 ± 0.000 [0.750, 0.750] (n=3) | 0.510 ± 0.010"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- lstm − softmax: +0.240 ["), std::string::npos) << md;
  // The tables show n = 40, 100, 200, 500 (T = 81, 201, 401, 1001) and no other length.
  EXPECT_NE(md.find("| arch | d_model | n_layer | seeds | train ≤ | 81 | 201 | 401 | 1001 |"),
            std::string::npos)
      << md;
}

// One column per architecture, across tasks whose training streams differ in length for the same
// n (reverse_string T = 2n + 1, parity T = n): the first report of the full grid split every
// architecture into a column per task.
TEST(ChomskyReport, OneColumnPerArchitectureAcrossTasks) {
  std::vector<nlohmann::json> rows;
  for (auto n : chomsky_score_lengths())
    for (const char* arch : {"lstm", "softmax"}) {
      rows.push_back(row(arch, 0, n, 0.9));
      auto p = row(arch, 0, n, 0.8);
      p["task"] = "parity";
      p["train_length"] = 40;
      p["test_length"] = n;
      rows.push_back(p);
    }
  const auto md = chomsky_report(rows, "");
  EXPECT_NE(md.find("| task | tier | lstm | softmax | *input-blind* |"), std::string::npos) << md;
  EXPECT_NE(md.find("| parity | R | 0.800 | 0.800 |"), std::string::npos) << md;
  // A second width of one architecture still gets its own column, named by its configuration.
  for (auto n : chomsky_score_lengths()) {
    auto w = row("lstm", 0, n, 0.7);
    w["d_model"] = 128;
    rows.push_back(w);
  }
  const auto two = chomsky_report(rows, "");
  EXPECT_NE(two.find("| task | tier | lstm d64 L2 n<=40 | softmax | lstm d128 L2 n<=40 |"),
            std::string::npos)
      << two;
}

// gnuplot accepts the heatmap's script: the image exists and the report links it.
TEST(ChomskyReport, ScoreHeatmapRenders) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  std::vector<nlohmann::json> rows;
  for (auto n : chomsky_score_lengths()) {
    rows.push_back(row("lstm", 0, n, 1.0));
    rows.push_back(row("softmax", 0, n, 0.5));
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("seqlab_chomsky_plot_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto md = chomsky_report(rows, dir.string());
  ASSERT_TRUE(std::filesystem::exists(dir / "score.svg"));
  EXPECT_GT(std::filesystem::file_size(dir / "score.svg"), 1000u);
  EXPECT_NE(md.find("(plots/score.svg)"), std::string::npos) << md;
  std::filesystem::remove_all(dir);
}

TEST(ChomskyReport, RowsWithoutTheScoreLengthsSayWhatTheyTested) {
  std::vector<nlohmann::json> rows = {row("lstm", 0, 40, 1.0), row("lstm", 0, 100, 0.9),
                                      row("lstm", 0, 500, 0.6)};
  const auto md = chomsky_report(rows, "");
  EXPECT_NE(md.find("Not computed: no cell tested every one of these lengths (the rows test n = "
                    "40, 100, 500)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| lstm | 64 | 2 | 1 | 81 | 1.000 ✓ |"), std::string::npos) << md;
}

TEST(ChomskyReport, FullGridTestsTheScoreLengthsAndQuickDoesNot) {
  const auto full = chomsky_suite(false), quick = chomsky_suite(true);
  ASSERT_FALSE(full.cells.empty());
  const auto& c = full.cells.front();  // parity: T = n
  EXPECT_EQ(c["test_lengths"].size(), 25u);
  EXPECT_EQ(c["test_lengths"][0], 40);
  EXPECT_EQ(c["test_lengths"][1], 41);
  EXPECT_EQ(c["eval_sizes"][0], 512);
  EXPECT_EQ(c["eval_sizes"][1], 128);
  EXPECT_EQ(quick.cells.front()["test_lengths"].size(), 3u);
  EXPECT_FALSE(quick.cells.front().contains("eval_sizes"));
}

TEST(HierarchySuite, FullGridTestsTo2048AndQuickDoesNot) {
  for (const auto& c : hierarchy_suite(false).cells) {
    SCOPED_TRACE(c["id"].get<std::string>());
    const auto& L = c["test_lengths"];
    ASSERT_GE(L.size(), 2u);
    EXPECT_EQ(L[L.size() - 2], 1024);
    EXPECT_EQ(L[L.size() - 1], 2048);
    EXPECT_EQ(c["eval_sizes"].size(), L.size());
    EXPECT_EQ(c["eval_sizes"][L.size() - 2], 128);
    EXPECT_EQ(c["eval_sizes"][L.size() - 1], 128);
    EXPECT_EQ(c["eval_sizes"][0], 512);
    EXPECT_GE(c["model"]["max_context"].get<int64_t>(), 2048);
  }
  for (const auto& c : hierarchy_suite(true).cells) {
    EXPECT_LE(c["test_lengths"].back().get<int64_t>(), 256);
    EXPECT_FALSE(c.contains("eval_sizes"));
  }
}
