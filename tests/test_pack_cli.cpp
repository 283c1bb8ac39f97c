// seqlab pack: a trained lm with its own BPE tokenizer becomes a self-contained bf16 directory that
// still loads, evaluates and generates after the original (and its tokenizer) are gone.
#include "cli_testing.h"

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

double valid_ppl(const std::string& model) {
  auto r = run_seqlab("eval --model " + model + " --max-tokens 4096 --threads 1 -q --json");
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return NAN;
  const auto j = nlohmann::json::parse(r.out);
  return j["ppl"].get<double>();
}

}  // namespace

TEST(PackCli, Bf16DirectoryIsSelfContainedAndKeepsQuality) {
  const auto tok = cli_tmp("pack_tok"), model = cli_tmp("pack_model");
  const auto packed = cli_tmp("pack_out"), moved = cli_tmp("pack_moved");
  auto r = run_seqlab("tokenizer train --corpus wordnet --vocab-size 400 --out " + tok + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("train --task lm --tokenizer " + tok + " --max-len 32 --d-model 32 --n-head 4 " +
                 "--n-layer 1 --batch 4 --steps 20 --threads 1 -q --out " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("pack --model " + model + " --out " + packed + " --dtype bf16 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  // Half the bytes of the f32 weights, every floating tensor stored as BF16.
  const auto f32 = fs::file_size(fs::path(model) / kWeightsFile);
  const auto bf16 = fs::file_size(fs::path(packed) / kWeightsFile);
  EXPECT_LT(bf16, f32 * 0.55);
  for (const auto& [name, t] :
       load_safetensors((fs::path(packed) / kWeightsFile).string()).tensors)
    if (t.is_floating_point()) EXPECT_EQ(t.scalar_type(), torch::kBFloat16) << name;
  EXPECT_EQ(read_config_json(packed)["task"]["tokenizer"], "bpe");
  EXPECT_TRUE(fs::exists(fs::path(packed) / "vocab.json"));
  EXPECT_TRUE(fs::exists(fs::path(packed) / "metrics.jsonl"));
  EXPECT_FALSE(fs::exists(fs::path(packed) / "train_state.safetensors"));
  // Moved away from the original and its tokenizer, it still evaluates and generates.
  const double before = valid_ppl(model);
  fs::rename(packed, moved);
  fs::remove_all(tok);
  const double after = valid_ppl(moved);
  EXPECT_NEAR(after / before, 1.0, 0.01) << "bf16 rounding moves perplexity by < 1%";
  r = run_seqlab("generate --model " + moved + " --prompt 'The cat' -n 5 --temperature 0 -q");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(PackCli, BadInputExits2) {
  const auto model = cli_tmp("pack_bad_model");
  auto r = run_seqlab("train --task parity --max-len 8 --steps 2 --threads 1 -q --out " + model);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("pack --model " + model + " --out " + cli_tmp("pack_bad") + " --dtype int3 -q");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--dtype must be bf16, f16 or f32"), std::string::npos) << r.err;
  r = run_seqlab("pack --model " + model + " --out " + model + " -q");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out must differ"), std::string::npos) << r.err;
}
