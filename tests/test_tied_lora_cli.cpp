// seqlab suite tied_lora (issue 36 §3), a slice of its --quick grid: a teacher, its Hedgehog
// conversion finetuned in full, and from the same converted model LoRA, Tied-LoRA with A and B
// shared, and Tied-LoRA with only A shared. Checks the rows (adapter, share, train, trainable
// counts against the formulas of model/adapters.h) and that the report compares each one with
// LoRA.
#include "cli_testing.h"
#include "suite_rows_testing.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

using namespace seqlab;
using namespace seqlab::testing;

TEST(TiedLoraCli, QuickSliceComparesConfigurationsWithLora) {
  const auto out = cli_tmp("tied_lora");
  auto r = run_seqlab("suite tied_lora --quick --jobs 1 --no-plots -q --out " + out +
                      " --only '^(lora|tl_ABuv|tA_AB)_s0$'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto [valid, test] = read_split_rows(out + "/results.jsonl");
  for (const char* c : {"teacher_s0", "full_s0", "lora_s0", "tl_ABuv_s0", "tA_AB_s0"}) {
    ASSERT_TRUE(valid.count(c) && test.count(c)) << c;
    EXPECT_GT(test[c]["ppl"].get<double>(), 1.0) << c;
  }
  // Quick model: d_model 32, MLP 128, 2 layers, rank 8 on q,k,v,o (32x32), fc1 [128,32],
  // fc2 [32,128]. Per layer sum_t r (in + out) = 8 (4 * 64 + 160 + 160) = 4608.
  EXPECT_EQ(valid["lora_s0"]["adapter"], "lora");
  EXPECT_EQ(valid["lora_s0"]["trainable"], 2 * 4608);
  // Shared A, B trained once, plus per layer u (8) and v (out: 32 x 5 + 128) for 6 targets.
  EXPECT_EQ(valid["tl_ABuv_s0"]["adapter_share"], "A,B");
  EXPECT_EQ(valid["tl_ABuv_s0"]["adapter_train"], "A,B,u,v");
  EXPECT_EQ(valid["tl_ABuv_s0"]["trainable"], 4608 + 2 * (6 * 8 + 5 * 32 + 128));
  // Shared A (r * in: 8 (5 * 32 + 128)), B per layer (out * r: 8 (5 * 32 + 128) per layer).
  EXPECT_EQ(valid["tA_AB_s0"]["adapter_share"], "A");
  EXPECT_EQ(valid["tA_AB_s0"]["trainable"], 8 * 288 + 2 * 8 * 288);
  EXPECT_EQ(valid["full_s0"]["init"], "converted");
  EXPECT_TRUE(valid["full_s0"].contains("ppl_converted"));
  const auto report = slurp_file(out + "/report.md");
  EXPECT_NE(report.find("test vs LoRA (paired)"), std::string::npos) << report;
  EXPECT_NE(report.find("| tied A,B; train A,B,u,v | A,B | A,B,u,v |"), std::string::npos)
      << report;
  EXPECT_NE(report.find("LoRA's gain kept"), std::string::npos) << report;
}
