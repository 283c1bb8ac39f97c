// seqlab calibrate and seqlab eval --exit-threshold / --swag-samples, as a user runs them.
#include "cli_testing.h"

#include <nlohmann/json.hpp>

using namespace seqlab::testing;

namespace {

// A small difficulty classifier with exits after layers 1 and 2 of 3, and SWAG moments.
const std::string& trained_model() {
  static const std::string dir = [] {
    auto d = cli_tmp("diff");
    auto r = run_seqlab(
        "train --task difficulty --n-layer 3 --d-model 16 --n-head 2 --max-len 20 "
        "--exits 1,2 --steps 60 --batch 16 --threads 1 --swag-start 30 "
        "--swag-every 5 --swag-rank 4 -q --out " +
        d);
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

}  // namespace

TEST(ClassifyCli, CalibrateThenEvaluateTheExitCurveAndSwag) {
  const auto& m = trained_model();
  auto cal = run_seqlab("calibrate --model " + m + " --n 200 --threads 1 --json");
  ASSERT_EQ(cal.code, 0) << cal.err;
  auto cj = nlohmann::json::parse(cal.out);
  ASSERT_EQ(cj["exits"].size(), 3u);
  for (const auto& e : cj["exits"]) EXPECT_LE(e["nll_after"], e["nll_before"].get<double>() + 1e-9);

  auto ev = run_seqlab("eval --model " + m +
                       " --split test --n 100 --threads 1 --exit-threshold 0,0.8,1.01 "
                       "--swag-samples 3 --json");
  ASSERT_EQ(ev.code, 0) << ev.err;
  auto j = nlohmann::json::parse(ev.out);
  ASSERT_EQ(j["curve"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["curve"][0]["mean_layers"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["curve"][2]["mean_layers"].get<double>(), 3.0);
  // The temperatures calibrate wrote are the ones eval uses.
  for (size_t e = 0; e < 3; ++e)
    EXPECT_NEAR(j["exits"][e]["temperature"].get<double>(),
                cj["exits"][e]["temperature"].get<double>(), 1e-6);
  ASSERT_EQ(j["uncertainty"].size(), 3u);
  EXPECT_EQ(j["uncertainty"][0]["method"], "sgd");
  EXPECT_TRUE(j["uncertainty"][2].contains("entropy_pearson"));  // difficulty knows annotators
  EXPECT_EQ(j["swag_snapshots"], 6);

  // The human-readable form has the tables.
  auto txt = run_seqlab("eval --model " + m + " --n 50 --threads 1 --exit-threshold 0.5");
  ASSERT_EQ(txt.code, 0) << txt.err;
  EXPECT_NE(txt.out.find("mean layers"), std::string::npos) << txt.out;
  EXPECT_NE(txt.out.find("ECE(T=1)"), std::string::npos) << txt.out;
}

TEST(ClassifyCli, BadInputIsAnErrorWithExitCode2) {
  const auto& m = trained_model();
  expect_cli_error("eval --model " + m + " --exit-threshold 0.5,abc", "'abc' is not a number");
  expect_cli_error("eval --model " + m + " --exit-threshold 0.5 --lengths 10", "drop --task");
  expect_cli_error(
      "train --task difficulty --n-layer 2 --exits 3 --steps 5 --out " + cli_tmp("bad_exits"),
      "layer 3 does not exist");
  expect_cli_error("train --task parity --exits 1 --steps 5 --out " + cli_tmp("bad_head"),
                   "needs a classify head");
  expect_cli_error(
      "train --task difficulty --steps 100 --swag-start 100 --out " + cli_tmp("bad_swag"),
      "not inside the run");
  expect_cli_error(
      "train --task difficulty --steps 100 --swag-rank 5 --out " + cli_tmp("bad_swag2"),
      "need --swag-start");
  auto plain = cli_tmp("plain");
  ASSERT_EQ(run_seqlab("train --task difficulty --n-layer 1 --d-model 16 --max-len 20 --steps 2 "
                       "--threads 1 -q --out " +
                       plain)
                .code,
            0);
  expect_cli_error("calibrate --model " + plain, "has no early exits");
  expect_cli_error("eval --model " + plain + " --exit-threshold 0.5", "has no early exits");
  expect_cli_error("eval --model " + plain + " --swag-samples 4", "--swag-start");
}
