// Issue 32, section 4: the Llama and GPT-NeoX layouts through the whole conversion pipeline as a
// user runs it. A Llama-shaped (RoPE, GQA, RMSNorm, SwiGLU, no biases, untied) and a NeoX-shaped
// (partial RoPE, parallel residual, LayerNorm) teacher are trained, exported to the HF layout (the
// family export-hf picks is checked), converted to Hedgehog with attention transfer on their
// training text, finetuned, and decoded by both engines, which must agree. The imported HF
// fixture itself (tests/data/hf/llama, written by Python) converts without data and decodes the
// same on both engines.
#include "cli_testing.h"
#include "hf_testing.h"

#include "seqlab/model/model_dir.h"
#include "seqlab/model/model.h"

#include <nlohmann/json.hpp>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

const std::string kLm =
    " --task lm --max-len 32 --d-model 32 --n-head 4 --n-layer 2 --batch 4 --threads 1 -q ";
const std::string kLlama =
    " --arch softmax --rope --rope-theta 10000 --n-kv-head 2 --norm rms --norm-eps 1e-6 --mlp "
    "swiglu --d-mlp 80 --qkv-bias false --o-bias false --mlp-bias false --tie-embeddings false ";
const std::string kNeox =
    " --arch softmax --rope --rope-fraction 0.25 --parallel-residual --d-mlp 128 "
    "--tie-embeddings false ";

// Greedy continuation ids of `model` on `engine`, as generate --json prints them.
std::vector<int64_t> greedy(const std::string& model, const std::string& engine,
                            const std::string& prompt) {
  auto r = run_seqlab("generate --model " + model + " " + prompt +
                      " -n 12 --temperature 0 --json -q --engine " + engine);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return {};
  return nlohmann::json::parse(r.out)["generated_ids"].get<std::vector<int64_t>>();
}

void convert_family(const std::string& name, const std::string& options,
                    const std::string& hf_type) {
  const auto teacher = cli_tmp(name + "_teacher"), hf = cli_tmp(name + "_hf");
  const auto hh = cli_tmp(name + "_hh"), ft = cli_tmp(name + "_ft");
  auto r = run_seqlab("train --out " + teacher + kLm + options + " --steps 3");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("export-hf --model " + teacher + " --out " + hf + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp_file(hf + "/config.json"))["model_type"], hf_type);
  r = run_seqlab("convert --model " + teacher + " --out " + hh +
                 " --to hedgehog --distill-steps 3 --distill-batch 2 --distill-len 32 "
                 "--threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto cfg = read_config_json(hh)["model"];
  EXPECT_EQ(cfg["feature_map"], "hedgehog");
  EXPECT_EQ(cfg["rope"], true) << "conversion keeps RoPE";
  EXPECT_EQ(cfg["rope_fraction"], read_config_json(teacher)["model"]["rope_fraction"]);
  EXPECT_EQ(cfg["n_kv_head"], read_config_json(teacher)["model"]["n_kv_head"]) << "and GQA";
  r = run_seqlab("finetune --model " + hh + " --out " + ft +
                 " --steps 3 --batch 2 --max-len 32 --threads 1 -q --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fast = greedy(ft, "fast", "--prompt 'The cat'");
  EXPECT_EQ(fast.size(), 12u);
  EXPECT_EQ(fast, greedy(ft, "torch", "--prompt 'The cat'"));
}

}  // namespace

TEST(FamilyConvertCli, LlamaLayoutConvertsFinetunesAndDecodes) {
  convert_family("llama", kLlama, "llama");
}

TEST(FamilyConvertCli, NeoxLayoutConvertsFinetunesAndDecodes) {
  convert_family("neox", kNeox, "gpt_neox");
}

TEST(FamilyConvertCli, ImportedHubFixtureConverts) {
  const auto imported = cli_tmp("fixture"), t2r = cli_tmp("fixture_t2r");
  const std::string src = hf_fixture("llama").string();
  auto r = run_seqlab("import-hf --hf " + src + " --out " + imported + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_seqlab("convert --model " + imported + " --out " + t2r + " --to t2r -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto fast = greedy(t2r, "fast", "--prompt-ids 1,5,9,13");
  EXPECT_EQ(fast.size(), 12u);
  EXPECT_EQ(fast, greedy(t2r, "torch", "--prompt-ids 1,5,9,13"));
}

// Pythia and Qwen2 pad their embedding past the tokenizer (50304 rows for 50277 ids): eval and
// finetune keep the padded rows instead of refusing the model.
TEST(FamilyConvertCli, PaddedVocabularyEvaluatesAndFinetunes) {
  const auto trained = cli_tmp("unpadded"), padded = cli_tmp("padded"), ft = cli_tmp("padded_ft");
  auto r = run_seqlab("train --out " + trained + kLm + kNeox + " --steps 1");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lm = load_model_dir(trained);
  ModelConfig c = lm.config;
  c.vocab_size += 7;  // 257 byte ids -> 264 rows
  SeqModel big(c);
  {
    torch::NoGradGuard ng;
    auto src = model_tensors(*lm.model);
    for (auto& [name, t] : model_tensors(*big)) {
      const auto& s = src.at(name);
      if (s.sizes() == t.sizes())
        t.copy_(s);
      else
        t.narrow(0, 0, s.size(0)).copy_(s);  // wte / head: the first 257 rows
    }
  }
  save_model_dir(padded, *big, lm.sections);
  r = run_seqlab("eval --model " + padded + " --n 4 --lengths 16 --threads 1 -q --json");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_seqlab("finetune --model " + padded + " --out " + ft +
                 " --steps 1 --batch 2 --max-len 16 --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_config_json(ft)["model"]["vocab_size"], 264);
}
