// The swap-then-finetune commands as a user runs them: train a softmax model, convert it (with
// attention transfer), finetune it with adapters, merge, evaluate; and each bad input refused with
// exit code 2 and nothing written.
#include "cli_testing.h"

#include "seqlab/model/model_dir.h"

#include <nlohmann/json.hpp>

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " --task copy --max-len 12 --d-model 16 --n-head 2 --n-layer 2 --batch 8 --threads 1 -q ";

// A small trained softmax model, made once per test process.
const std::string& teacher() {
  static const std::string dir = [] {
    auto d = cli_tmp("teacher");
    auto r = run_seqlab("train --out " + d + kTiny + " --steps 20");
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

nlohmann::json json_of(const std::string& s) {
  return nlohmann::json::parse(s);
}

}  // namespace

TEST(ConvertCli, ConvertDistillFinetuneMergeEvaluate) {
  const auto hh = cli_tmp("hh");
  auto r = run_seqlab("convert --model " + teacher() + " --out " + hh +
                      " --to hedgehog --distill-steps 10 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = json_of(r.out);
  const auto& d = j["convert"]["distill"];
  ASSERT_EQ(d["loss_before"].size(), 2u);
  EXPECT_LT(d["loss_after"][0].get<double>(), d["loss_before"][0].get<double>());
  auto cfg = read_config_json(hh);
  EXPECT_EQ(cfg["model"]["arch"], "linear");
  EXPECT_EQ(cfg["model"]["feature_map"], "hedgehog");
  EXPECT_EQ(cfg["task"]["task"], "copy");

  // LoRA finetuning: only the adapters train, and the count is printed.
  const auto ft = cli_tmp("ft");
  r = run_seqlab("finetune --model " + hh + " --out " + ft +
                 " --adapter lora --lora-rank 2 --lora-targets q,v --steps 4 --batch 4 "
                 "--threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  j = json_of(r.out);
  EXPECT_EQ(j["trainable"].get<int64_t>(), 2 * 2 * 2 * (16 + 16));  // layers * targets * r(in+out)
  cfg = read_config_json(ft);
  EXPECT_TRUE(cfg.contains("adapters"));
  EXPECT_EQ(cfg["finetune"]["init"], hh);
  r = run_seqlab("eval --model " + ft + " --lengths 8 --n 16 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const double unmerged = json_of(r.out)["results"][0]["loss"].get<double>();

  // The same run with --merge: the written model has no adapters and evaluates the same.
  const auto mg = cli_tmp("merged");
  r = run_seqlab("finetune --model " + hh + " --out " + mg +
                 " --adapter lora --lora-rank 2 --lora-targets q,v --steps 4 --batch 4 "
                 "--threads 1 -q --merge");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("trainable parameters 256 of"), std::string::npos) << r.out;
  EXPECT_FALSE(read_config_json(mg).contains("adapters"));
  r = run_seqlab("eval --model " + mg + " --lengths 8 --n 16 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NEAR(json_of(r.out)["results"][0]["loss"].get<double>(), unmerged, 1e-4);

  // Resuming a finished finetune with more steps continues it (adapters rebuilt from the saved
  // finetune section).
  r = run_seqlab("finetune --out " + ft + " --resume --steps 6 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_of(r.out)["start_step"].get<int64_t>(), 4);
  EXPECT_EQ(json_of(r.out)["steps"].get<int64_t>(), 6);

  // Tied-LoRA with only u and v trained: 2 layers * 2 targets * (r + out).
  const auto tl = cli_tmp("tied");
  r = run_seqlab("finetune --model " + hh + " --out " + tl +
                 " --adapter tied_lora --lora-rank 2 --lora-targets q,v --tied-train u,v "
                 "--steps 2 --batch 4 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_of(r.out)["trainable"].get<int64_t>(), 2 * 2 * (2 + 16));

  // Full finetuning trains every parameter.
  const auto full = cli_tmp("full");
  r = run_seqlab("finetune --model " + hh + " --out " + full +
                 " --steps 2 --batch 4 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  j = json_of(r.out);
  EXPECT_EQ(j["trainable"], j["parameters"]);
}

TEST(ConvertCli, BadInputIsRefusedAndNothingIsWritten) {
  const auto out = cli_tmp("bad");
  const auto hh = cli_tmp("hh_bad");
  ASSERT_EQ(run_seqlab("convert --model " + teacher() + " --out " + hh + " --to t2r -q").code, 0);
  expect_cli_error("convert --model " + hh + " --out " + out + " --to hedgehog",
                   "not a softmax-attention model");
  expect_cli_error("convert --model " + teacher() + " --out " + out + " --to lstm",
                   "--to must name a linear-attention feature map");
  expect_cli_error(
      "convert --model " + teacher() + " --out " + out + " --to elu1 --distill-steps 2",
      "has no parameters to train");
  expect_cli_error("convert --model " + cli_tmp("nothing") + " --out " + out, "not a directory");
  expect_cli_error("convert --model " + teacher() + " --out " + hh, "already holds a model");
  expect_cli_error(
      "finetune --model " + hh + " --out " + out + " --adapter lora --lora-targets q,wq",
      "adapter target 'wq' names no linear layer");
  expect_cli_error(
      "finetune --model " + hh + " --out " + out + " --adapter tied_lora --tied-train A,C",
      "'C' is not one of A,B,u,v");
  expect_cli_error("finetune --model " + hh + " --out " + out + " --adapter dora",
                   "--adapter must be none, lora or tied_lora");
  expect_cli_error("finetune --out " + out, "--model is required");
  EXPECT_FALSE(fs::exists(out)) << "a refused command wrote " << out;
}
