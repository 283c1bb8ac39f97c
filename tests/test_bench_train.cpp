// seqlab bench train: every requested row is measured and every format carries it. (Speeds are
// reported, not asserted.)
#include "seqlab/core/error.h"
#include "seqlab/train/bench_train.h"

#include "cli_testing.h"

#include <nlohmann/json.hpp>

using namespace seqlab;

namespace {

TrainBenchConfig tiny() {
  TrainBenchConfig c;
  c.archs = {"softmax", "t2r", "lstm"};
  c.d_model = 16;
  c.n_layer = 1;
  c.batch = 2;
  c.length = 12;
  c.form_lengths = {16, 40};
  c.steps = 1;
  c.reps = 2;
  return c;
}

}  // namespace

TEST(BenchTrain, MeasuresEveryRowAndFormatsThem) {
  auto rows = run_train_bench(tiny());
  ASSERT_EQ(rows.size(), 3u + 2u * 2u);
  for (const auto& r : rows) {
    EXPECT_GT(r.tokens_per_s, 0) << r.name;
    EXPECT_GE(r.sd, 0) << r.name;
  }
  EXPECT_EQ(rows[3].name, "quadratic");
  EXPECT_EQ(rows[4].name, "chunked");
  EXPECT_NEAR(rows[4].ratio, rows[4].tokens_per_s / rows[3].tokens_per_s, 1e-9);
  auto j = nlohmann::json::parse(format_train_bench(rows, "json"));
  ASSERT_EQ(j.size(), rows.size());
  EXPECT_TRUE(j[6].contains("chunked_over_quadratic"));
  const auto csv = format_train_bench(rows, "csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + static_cast<long>(rows.size()));
  const auto md = format_train_bench(rows, "md");
  for (const char* name :
       {"| softmax |", "| t2r |", "| lstm |", "| quadratic | 40 |", "| chunked | 40 |"})
    EXPECT_NE(md.find(name), std::string::npos) << name << "\n" << md;
  EXPECT_THROW(format_train_bench(rows, "xml"), Error);
  auto bad = tiny();
  bad.steps = 0;
  EXPECT_THROW(run_train_bench(bad), Error);
}

TEST(BenchTrain, Cli) {
  auto r = seqlab::testing::run_seqlab(
      "bench train --archs gru --d-model 16 --n-layer 1 --batch 2 --length 8 --form-lengths 16 "
      "--steps 1 --reps 1 -q -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["name"], "gru");
  seqlab::testing::expect_cli_error("bench train --archs transformerxl -q", "unknown architecture");
  seqlab::testing::expect_cli_error("bench train --steps 0 -q", "must be positive");
}
