#include "seqlab/exp/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

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
  EXPECT_NE(md.find("| lstm | 32 | 1 | 2 | 40 | 0.950 ±0.635 (1.000) ✓ | 0.600 ±1.271 (0.700) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| softmax | 32 | 1 | 1 | 40 | 0.550 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("Saturation"), std::string::npos);
}

// ±h is the half-width of the mean's 95% t interval (2 seeds: t = 12.706 times sd / sqrt(2)); at
// the longest length every configuration reached, the best mean is set against each other one with
// Welch's interval, and an interval over 0 says the difference is not resolved.
TEST(Report, IntervalsInCellsAndDifferencesAtTheLongestLength) {
  std::vector<nlohmann::json> rows;
  const double lstm[] = {0.9, 0.95, 1.0}, softmax[] = {0.5, 0.55, 0.6}, gru[] = {0.3, 0.9, 1.0};
  for (uint64_t s = 0; s < 3; ++s) {
    rows.push_back(row("lstm", s, 40, 1.0));
    rows.push_back(row("lstm", s, 80, lstm[s]));
    rows.push_back(row("softmax", s, 80, softmax[s]));
    rows.push_back(row("gru", s, 80, gru[s]));
  }
  const auto md = report_tables(rows);
  EXPECT_NE(md.find("Differences at test length 80"), std::string::npos) << md;
  // sd 0.05 on both sides: se = 0.0408, df = 4, t = 2.776: +0.400 ± 0.113.
  EXPECT_NE(md.find("- lstm − softmax: +0.400 [+0.287, +0.513], Welch 95%, n = 3 vs 3\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- lstm − gru: +0.217 ["), std::string::npos) << md;
  EXPECT_NE(md.find("n = 3 vs 3; not resolved (the interval includes 0)"), std::string::npos) << md;
  EXPECT_NE(md.find("| lstm | 32 | 1 | 3 | 40 | 1.000 ±0.000 (1.000) ✓ | 0.950 ±0.124 (1.000) ✓ |"),
            std::string::npos)
      << md;
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

// The input-blind row: one value per (length, seed) however many architectures share the test
// set, averaged over seeds, and none from saturation rows.
TEST(Report, InputBlindRowAveragesSeedsOnce) {
  std::vector<nlohmann::json> rows;
  for (auto arch : {"lstm", "softmax", "t2r"})
    for (uint64_t seed : {0, 1}) {
      auto r = row(arch, seed, 40, 0.9);
      r["blind_accuracy"] = seed == 0 ? 0.5 : 0.7;
      rows.push_back(r);
      r = row(arch, seed, 80, 0.8);
      r["blind_accuracy"] = 0.75;
      rows.push_back(r);
    }
  auto sat = row("lstm", 0, 40, 0.2, 8);
  sat["blind_accuracy"] = 0.0;  // would pull the mean down if counted
  rows.push_back(sat);
  auto md = report_tables(rows);
  EXPECT_NE(md.find("| *input-blind* | | | | | *0.600* | *0.750* |"), std::string::npos) << md;
  EXPECT_NE(md.find("input-blind*: the accuracy of always guessing"), std::string::npos);
  // Without the field (rows from before it existed, or a custom suite) there is no such row.
  EXPECT_EQ(report_tables({row("lstm", 0, 40, 1.0)}).find("input-blind"), std::string::npos);
}

// Per-kind accuracy is right / share for each seed, then mean (best) over seeds; a kind with no
// examples in a seed's test set gives that seed no value; a share without its "_right" twin, or
// a row with neither, adds no column.
TEST(Report, KindsTableDividesRightByShareAndAveragesSeeds) {
  auto a = row("lstm", 0, 40, 0.75);
  a["pos_share"] = 0.5;
  a["pos_right"] = 0.5;  // 1.0 on members
  a["neg_type_share"] = 0.25;
  a["neg_type_right"] = 0.05;  // 0.2
  a["orphan_share"] = 0.25;    // no orphan_right: not a kind
  auto b = row("lstm", 1, 40, 0.9);
  b["pos_share"] = 0.6;
  b["pos_right"] = 0.48;  // 0.8
  b["neg_type_share"] = 0.0;
  b["neg_type_right"] = 0.0;  // absent kind: no accuracy for seed 1
  auto md = report_tables({a, b, row("softmax", 0, 40, 0.5)});
  EXPECT_NE(md.find("By kind of test example"), std::string::npos) << md;
  EXPECT_NE(md.find("| arch | d_model | n_layer | seeds | test length | neg_type | pos |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| lstm | 32 | 1 | 2 | 40 | 0.200 | 0.900 ±1.271 (1.000) ✓ |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| *share of test set* | | | | 40 | *0.125* | *0.550* |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("orphan"), std::string::npos) << md;
  EXPECT_EQ(md.find("| softmax | 32 | 1 | 1 | 40 | |"), std::string::npos) << md;
  // Rows without kinds: no such table.
  EXPECT_EQ(report_tables({row("lstm", 0, 40, 1.0)}).find("By kind"), std::string::npos);
}

TEST(Report, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  // And the shell reads it back as the same string.
  const std::string odd = "x 'y' $HOME \"z\"";
  const auto out =
      std::filesystem::temp_directory_path() / ("seqlab_report_quote." + std::to_string(getpid()));
  ASSERT_EQ(
      std::system(("printf %s " + shell_quote(odd) + " > " + shell_quote(out.string())).c_str()),
      0);
  std::ifstream f(out);
  std::string back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(out);
  EXPECT_EQ(back, odd);
}

// A chomsky plot has nine architectures; gnuplot's own colours repeat after eight, so the ninth
// line was drawn in the first one's colour (and the conversion plot has 13 lines). Sixteen lines
// must get sixteen colours.
TEST(Report, PlotsGiveSixteenLinesSixteenColours) {
  namespace fs = std::filesystem;
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const auto dir =
      fs::temp_directory_path() / ("seqlab report colours " + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto made = render_plot(dir.string(), "many",
                                "plot for [i=1:16] i*x with lines title sprintf('%d', i)\n");
  ASSERT_EQ(made, (std::vector<std::string>{"many.svg", "many.png"}));
  std::ifstream f(dir / "many.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::set<std::string> colours;  // gnuplot's SVG writes each line's colour as stroke='rgb(..)'
  for (size_t at = svg.find("stroke='rgb("); at != std::string::npos;
       at = svg.find("stroke='rgb(", at + 1))
    colours.insert(svg.substr(at, svg.find(')', at) - at));
  EXPECT_GE(colours.size(), 16u) << svg.substr(0, 2000);
  fs::remove_all(dir);
}

// The scripts a report writes name nothing outside their directory, so a results directory that
// is moved or committed can be re-plotted where it lies.
TEST(Report, PlotScriptsUseNamesRelativeToTheirDirectory) {
  namespace fs = std::filesystem;
  const auto root =
      fs::temp_directory_path() / ("seqlab report plots '" + std::to_string(getpid()) + "'");
  fs::remove_all(root);
  const auto before = root / "made here", after = root / "moved";
  fs::create_directories(before);
  {
    std::ofstream d(before / "line.dat");
    d << "1 0.5\n2 0.75\n";
  }
  const auto made = render_plot(before.string(), "line", "plot 'line.dat' with lines\n");
  for (const char* gp : {"line.svg.gp", "line.png.gp"}) {
    std::ifstream f(before / gp);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << gp;
    EXPECT_EQ(text.find(root.string()), std::string::npos) << text;
    EXPECT_NE(text.find("set output 'line."), std::string::npos) << text;
  }
  if (!have_gnuplot()) {
    EXPECT_TRUE(made.empty());
    fs::remove_all(root);
    GTEST_SKIP() << "gnuplot not installed: scripts checked, images not";
  }
  EXPECT_EQ(made, (std::vector<std::string>{"line.svg", "line.png"}));
  EXPECT_GT(fs::file_size(before / "line.svg"), 0u);
  // Move the directory, delete the images, and rerun the scripts where they now lie.
  fs::rename(before, after);
  fs::remove(after / "line.svg");
  ASSERT_EQ(
      std::system(("cd " + shell_quote(after.string()) + " && gnuplot line.svg.gp >/dev/null 2>&1")
                      .c_str()),
      0);
  EXPECT_TRUE(fs::exists(after / "line.svg"));
  fs::remove_all(root);
}

// Separations trains each length on its own, so one architecture and width is one configuration
// per length. Its plot joins them into one line over length; configurations whose test lengths
// overlap keep separate lines, named by their training length.
TEST(Report, PlotJoinsConfigurationsThatDifferOnlyInTrainingLength) {
  namespace fs = std::filesystem;
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed";
  const auto dir = fs::temp_directory_path() / ("seqlab report join " + std::to_string(getpid()));
  fs::remove_all(dir);
  const auto at = [](const std::string& arch, int64_t T, int64_t L, double acc) {
    auto r = row(arch, 0, L, acc);
    r["train_length"] = T;
    return r;
  };
  SuiteSpec spec;
  spec.name = "join";
  const auto dat = [&](const std::vector<nlohmann::json>& rows) {
    write_report(spec, rows, dir.string(), true, 0);
    std::ifstream f(dir / "plots" / "parity.dat");
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(dat({at("lstm", 10, 10, 0.5), at("lstm", 18, 18, 0.25), at("softmax", 10, 10, 1.0)}),
            "# lstm d=32 L=1\n10 0.5\n18 0.25\n\n\n# softmax d=32 L=1\n10 1\n\n\n");
  EXPECT_EQ(dat({at("lstm", 10, 10, 0.5), at("lstm", 10, 18, 0.25), at("lstm", 18, 18, 0.75)}),
            "# lstm d=32 L=1 train<=10\n10 0.5\n18 0.25\n\n\n"
            "# lstm d=32 L=1 train<=18\n18 0.75\n\n\n");
  fs::remove_all(dir);
}
