// seqlab suite conversion_full (issue 33's grid on the shipped teacher), a slice of its --quick
// grid: the external-teacher cell copies models/teacher-en and measures it, the control and a
// converted hybrid finetune from it, the KL and LoRA cells start from the hybrid's converted
// model. Checks the result rows' fields (cell, init, method, seed, split, ppl, parameters,
// trainable, tokens), the token accounting, the test split and by-position rows, and that the
// report pairs the gap to the control by seed.
#include "cli_testing.h"
#include "suite_rows_testing.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

std::string source_dir() {
  const char* s = std::getenv("SEQLAB_SOURCE_DIR");
  return s ? s : ".";
}

// Runs `seqlab <args>` in the repository root (the suite finds models/teacher-en there).
int run_in_source(const std::string& args, std::string* err) {
  const auto e = (cli_scratch() / "conv_full.err").string();
  const int status = std::system(
      ("cd " + source_dir() + " && " + seqlab_bin() + " " + args + " >/dev/null 2>" + e).c_str());
  *err = slurp_file(e);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(ConversionFullCli, QuickSliceWritesSeededRowsOnBothSplits) {
  if (!std::filesystem::exists(source_dir() + "/data/english/SOURCES"))
    GTEST_SKIP() << "data/english missing: run scripts/setup.sh";
  const auto out = std::filesystem::absolute(cli_tmp("conv_full")).string();
  std::string err;
  ASSERT_EQ(run_in_source("suite conversion_full --quick --jobs 1 --no-plots -q --out " + out +
                              " --only 'control_s0|hybrid_(kl|lora)_s0'",
                          &err),
            0)
      << err;
  auto [valid, test] = read_split_rows(out + "/results.jsonl");
  for (const char* c : {"teacher", "control_s0", "hybrid_s0", "hybrid_kl_s0", "hybrid_lora_s0"}) {
    ASSERT_TRUE(valid.count(c) && test.count(c)) << c;
    for (const char* k :
         {"cell", "init", "method", "seed", "split", "ppl", "parameters", "trainable", "tokens"})
      EXPECT_TRUE(test[c].contains(k)) << c << " " << k;
    EXPECT_GT(test[c]["ppl"].get<double>(), 1.0) << c;
    // By position on test: windows of 4 x 256 tokens in buckets of 64.
    EXPECT_EQ(test[c]["position_context"], 1024) << c;
    EXPECT_EQ(test[c]["by_position"].size(), 16u) << c;
    EXPECT_TRUE(valid[c]["by_position"].empty()) << c;
  }
  const int64_t teacher_tokens = valid["teacher"]["tokens"];
  EXPECT_EQ(teacher_tokens, 2400 * 16 * 256);  // models/teacher-en's pretraining run
  EXPECT_EQ(valid["teacher"]["trainable"], 0);
  EXPECT_EQ(valid["teacher"]["init"], "teacher");
  EXPECT_EQ(valid["control_s0"]["init"], "control");
  EXPECT_EQ(valid["control_s0"]["method"], "control");
  // Quick budget: 4 finetuning steps of 8 x 256, 2 transfer steps of 8 x 256.
  EXPECT_EQ(valid["control_s0"]["tokens"], teacher_tokens + 4 * 8 * 256);
  EXPECT_EQ(valid["hybrid_s0"]["tokens"], teacher_tokens + (4 + 2) * 8 * 256);
  EXPECT_EQ(valid["hybrid_kl_s0"]["tokens"], teacher_tokens + (4 + 2) * 8 * 256);
  EXPECT_EQ(valid["hybrid_kl_s0"]["kl_teacher"], "teacher/model");
  EXPECT_EQ(valid["hybrid_s0"]["init"], "converted");
  EXPECT_EQ(valid["hybrid_s0"]["arch"], "hybrid");
  EXPECT_TRUE(valid["hybrid_s0"].contains("ppl_converted"));
  EXPECT_LT(valid["hybrid_lora_s0"]["trainable"].get<int64_t>(),
            valid["hybrid_s0"]["trainable"].get<int64_t>() / 4);
  const auto report = slurp_file(out + "/report.md");
  EXPECT_NE(report.find("test vs control"), std::string::npos);
  EXPECT_NE(report.find("Perplexity by position"), std::string::npos);
  EXPECT_NE(report.find("Best constant-memory conversion"), std::string::npos);
}

TEST(ConversionFullCli, ListsFromOutsideTheRepository) {
  // ctest runs in build/: the grid finds models/teacher-en beside the executable's build folder,
  // so it can be listed and checked from anywhere (it runs from the repository root).
  auto r = run_seqlab("suite conversion_full --list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hybrid_lora_s2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scratch_hybrid_s0"), std::string::npos) << r.out;
}
