// seqlab eval --context / --by-position: perplexity by position within windows longer than the
// training length (issue 33's length-extrapolation measurement). One bucket spanning the window
// must equal the plain perplexity over the same whole windows; the buckets partition the
// predictions; a learned-position model refuses windows past its table.
#include "cli_testing.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

nlohmann::json eval_json(const std::string& args) {
  auto r = run_seqlab("eval " + args + " --threads 1 -q --json");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

}  // namespace

TEST(EvalPositionsCli, BucketsAgreeWithPlainPerplexityAndExtrapolate) {
  const auto model = cli_tmp("evalpos_rope");
  auto r = run_seqlab(
      "train --task lm --max-len 32 --arch hybrid --window 8 --feature-map hedgehog --rope "
      "--d-model 32 --n-head 4 --n-layer 1 --batch 4 --steps 10 --threads 1 -q --out " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  // 8 whole windows of 128 predictions: max_tokens = 8 * 128 + 1.
  const std::string m = "--model " + model + " --max-tokens 1025 --context 128";
  const auto plain = eval_json(m);
  const auto one = eval_json(m + " --by-position 128");
  ASSERT_EQ(one["by_position"].size(), 1u);
  EXPECT_EQ(one["by_position"][0]["tokens"], 1024);
  EXPECT_NEAR(one["by_position"][0]["nll"].get<double>(), plain["nll"].get<double>(), 1e-5);
  const auto many = eval_json(m + " --by-position 48");
  ASSERT_EQ(many["by_position"].size(), 3u);  // 0-47, 48-95, 96-127
  double sum = 0;
  int64_t tokens = 0;
  for (const auto& b : many["by_position"]) {
    sum += b["nll"].get<double>() * b["tokens"].get<double>();
    tokens += b["tokens"].get<int64_t>();
  }
  EXPECT_EQ(tokens, 1024);
  EXPECT_NEAR(sum / tokens, plain["nll"].get<double>(), 1e-5);
  EXPECT_EQ(many["by_position"][2]["lo"], 96);
  EXPECT_EQ(many["by_position"][2]["hi"], 128);
}

TEST(EvalPositionsCli, LearnedPositionsRefuseLongerWindows) {
  const auto model = cli_tmp("evalpos_learned");
  auto r = run_seqlab(
      "train --task lm --max-len 16 --max-context 32 --d-model 16 --n-head 2 --n-layer 1 "
      "--batch 4 --steps 2 --threads 1 -q --out " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("eval --model " + model + " --context 64 --by-position 16 -q");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("longer than the model's 32 learned positions"), std::string::npos) << r.err;
  r = run_seqlab("eval --model " + model + " --by-position -3 -q");
  EXPECT_EQ(r.code, 2) << r.err;
}
