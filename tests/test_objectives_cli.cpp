// seqlab pretrain (tools/cmd_objectives.cpp): objectives that do not fit the architecture are
// one-line errors with exit code 2 and no output; a tiny run prints its rows as JSON and a rerun
// reuses the pretrained weights.
#include "cli_testing.h"

#include <nlohmann/json.hpp>

namespace seqlab::testing {
namespace {

TEST(ObjectivesCli, ObjectivesThatDoNotFitAreErrors) {
  const auto out = cli_tmp("bad");
  expect_cli_error("pretrain --objective mlm --stack decoder --out " + out,
                   "masked LM needs a bidirectional");
  expect_cli_error("pretrain --objective clm --stack encoder --out " + out, "causal LM objective");
  expect_cli_error("pretrain --objective translate --arch gru --out " + out,
                   "needs a bidirectional mixer");
  expect_cli_error("pretrain --objective denoise --stack decoder --out " + out,
                   "needs --stack encdec");
  expect_cli_error("pretrain --objective mlm --arch mamba --out " + out, "bidirectional mixer");
  expect_cli_error("pretrain --objective none --out " + out, "explicit --stack");
  expect_cli_error("pretrain --objective lm --out " + out, "unknown objective");
  expect_cli_error("pretrain --objective clm --stack sideways --out " + out, "unknown stack");
  expect_cli_error("pretrain --objective clm --batch 1 --out " + out, "batch must be at least 2");
  EXPECT_FALSE(std::filesystem::exists(out)) << "an error left output behind";
}

TEST(ObjectivesCli, TinyRunAndRerun) {
  const auto out = cli_tmp("tiny");
  const std::string args =
      "pretrain --objective translate --d-model 16 --n-head 2 --n-layer 2 --steps 20 --warmup 2 "
      "--probe-train 40 --probe-steps 5 --ft-train 20 --ft-steps 3 --ft-batch 8 --test-size 20 "
      "--json --out " +
      out;
  auto r = run_seqlab(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 12u);  // 3 languages x 2 tasks x (probe, finetune)
  EXPECT_EQ(j["config"]["stack"], "encdec");
  for (const auto& row : j["rows"]) {
    EXPECT_GE(row["accuracy"].get<double>(), 0.0);
    EXPECT_LE(row["accuracy"].get<double>(), 1.0);
  }
  EXPECT_TRUE(std::filesystem::exists(out + "/pretrained.safetensors"));
  auto r2 = run_seqlab(args);
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_NE(r2.err.find("pretrained weights found"), std::string::npos) << r2.err;
  EXPECT_EQ(nlohmann::json::parse(r2.out), j);
  // Another configuration must not reuse those weights.
  expect_cli_error(
      "pretrain --objective translate --d-model 16 --n-head 2 --n-layer 2 --steps 21 --out " + out,
      "another configuration");
}

}  // namespace
}  // namespace seqlab::testing
