// Issue 33, sections 1-2 as a user runs them: a Llama-shaped softmax teacher converted to the
// hybrid (sliding-window softmax + gated linear attention) with both transfer objectives; the
// transfer lowers its loss on held-out text, the converted model finetunes, and both engines
// decode it alike. Bad options exit 2 with a message that names them.
#include "cli_testing.h"

#include "seqlab/model/model_dir.h"

#include <nlohmann/json.hpp>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

const std::string kTeacher =
    " --task lm --max-len 32 --d-model 32 --n-head 4 --n-layer 2 --batch 4 --threads 1 -q "
    "--arch softmax --rope --n-kv-head 2 --norm rms --mlp swiglu --d-mlp 80 --qkv-bias false "
    "--o-bias false --mlp-bias false";

// A teacher trained once for every test of this file.
const std::string& teacher() {
  static const std::string dir = [] {
    const auto d = cli_tmp("hybrid_teacher");
    auto r = run_seqlab("train --out " + d + kTeacher + " --steps 30");
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::vector<int64_t> greedy(const std::string& model, const std::string& engine) {
  auto r = run_seqlab("generate --model " + model +
                      " --prompt 'The cat' -n 12 --temperature 0 --json -q --engine " + engine);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return {};
  return nlohmann::json::parse(r.out)["generated_ids"].get<std::vector<int64_t>>();
}

// Converts the teacher with `options`; returns convert's JSON summary.
nlohmann::json convert(const std::string& out, const std::string& options) {
  auto r = run_seqlab("convert --model " + teacher() + " --out " + out + " " + options +
                      " --distill-steps 25 --distill-batch 4 --distill-lr 0.03 --threads 1 -q "
                      "--json");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

void expect_transfer_helps(const nlohmann::json& j) {
  ASSERT_TRUE(j.contains("convert")) << j.dump();
  const auto& d = j["convert"]["distill"];
  const auto before = d["loss_before"].get<std::vector<double>>();
  const auto after = d["loss_after"].get<std::vector<double>>();
  ASSERT_EQ(before.size(), 2u);
  for (size_t l = 0; l < before.size(); ++l)
    EXPECT_LT(after[l], before[l]) << "layer " << l << " of " << j.dump();
}

}  // namespace

TEST(HybridConvertCli, OutputTransferThenFinetuneAndBothEnginesAgree) {
  const auto hy = cli_tmp("hybrid_out"), ft = cli_tmp("hybrid_out_ft");
  auto j = convert(hy, "--to hybrid --window 8 --feature-map hedgehog --gate key --decay 0.99 "
                       "--transfer output");
  expect_transfer_helps(j);
  auto cfg = read_config_json(hy)["model"];
  EXPECT_EQ(cfg["arch"], "hybrid");
  EXPECT_EQ(cfg["window"], 8);
  EXPECT_EQ(cfg["gate"], "key");
  EXPECT_EQ(cfg["feature_map"], "hedgehog");
  EXPECT_EQ(cfg["rope"], true);
  auto r = run_seqlab("finetune --model " + hy + " --out " + ft +
                      " --steps 3 --batch 2 --max-len 32 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fast = greedy(ft, "fast");
  EXPECT_EQ(fast.size(), 12u);
  EXPECT_EQ(fast, greedy(ft, "torch"));
}

TEST(HybridConvertCli, WeightTransferAndGatedLinearWithoutWindow) {
  expect_transfer_helps(convert(cli_tmp("hybrid_w"), "--to hybrid --window 4 --transfer weights"));
  const auto gla = cli_tmp("hybrid_gla");
  expect_transfer_helps(convert(gla, "--to hybrid --window 0 --gate key --feature-map t2r"));
  EXPECT_EQ(greedy(gla, "fast"), greedy(gla, "torch"));
  // The output objective on plain linear attention too.
  expect_transfer_helps(convert(cli_tmp("t2r_out"), "--to t2r --transfer output"));
}

TEST(HybridConvertCli, BadOptionsExit2) {
  struct Bad {
    std::string options, message;
  };
  for (const auto& b : std::vector<Bad>{
           {"--to hybrid --window 33", "larger than the context"},
           {"--to hybrid --window 100000", "larger than"},
           {"--to hybrid --window 8 --decay 0", "--decay must be in (0, 1]"},
           {"--to hybrid --window 8 --decay 1.5", "--decay must be in (0, 1]"},
           {"--to hybrid --window 8 --gate value", "--gate"},
           {"--to hybrid --window 8 --feature-map performer", "feature map without running offsets"},
           {"--to t2r --transfer logits", "--transfer must be weights or output"},
       }) {
    auto r = run_seqlab("convert --model " + teacher() + " --out " + cli_tmp("hybrid_bad") + " " +
                        b.options + " -q");
    EXPECT_EQ(r.code, 2) << b.options << "\n" << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << b.options << "\n" << r.err;
  }
}
