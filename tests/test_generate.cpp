// seqlab generate as a user runs it, on tiny softmax and T2R language models trained here: the
// fast decoder and SeqModel::step pick the same greedy tokens, a seed fixes the sample, a
// generation paused into a state file and resumed equals an uninterrupted one, and every bad input
// is refused with exit code 2 and nothing written. (seqlab bench decode: tests/test_bench.cpp.)
#include "cli_testing.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

// 300 distinct lines of words, so every split has a few.
std::string corpus() {
  static const std::string path = [] {
    const auto p = cli_tmp("corpus.txt");
    std::ofstream out(p);
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
    for (int i = 0; i < 300; ++i) {
      out << i;
      for (int j = 0; j < 4 + i % 5; ++j) out << " " << words[(i * 7 + j * 3) % 10];
      out << "\n";
    }
    return p;
  }();
  return path;
}

// A tiny byte-level lm model of the given arch, trained once per test process.
// A small LM of `arch`; `extra` adds model flags (e.g. "--mae true": one the fast engine lacks).
std::string lm_model(const std::string& arch, const std::string& extra = "") {
  static std::map<std::string, std::string> dirs;
  const std::string key = arch + (extra.empty() ? "" : "_mae");
  auto it = dirs.find(key);
  if (it != dirs.end()) return it->second;
  const auto d = cli_tmp("lm_" + key);
  auto r = run_seqlab("train --task lm --corpus " + corpus() + " --tokenizer byte --arch " + arch +
                      " " + extra +
                      " --d-model 32 --n-head 2 --n-layer 2 --min-len 32 --max-len 32 "
                      "--max-context 96 --steps 30 --batch 8 --lr 3e-3 --warmup 5 "
                      "--eval-every 30 --eval-size 8 --threads 1 -q --out " +
                      d);
  EXPECT_EQ(r.code, 0) << r.err;
  return dirs[key] = d;
}

nlohmann::json gen_json(const std::string& model, const std::string& args) {
  auto r = run_seqlab("generate --model " + model + " --threads 1 -q --json " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  if (r.code != 0) return nlohmann::json::object({{"generated_ids", nlohmann::json::array()}});
  return nlohmann::json::parse(r.out);
}

std::vector<int64_t> ids(const nlohmann::json& j) {
  return j.at("generated_ids").get<std::vector<int64_t>>();
}

const char* kArchs[] = {"softmax", "t2r"};

}  // namespace

TEST(GenerateCli, GreedyFastEqualsGreedyTorch) {
  for (const char* arch : kArchs) {
    const auto m = lm_model(arch);
    const std::string args = "--prompt 'the cat sat' -n 40 --temperature 0";
    const auto fast = gen_json(m, args + " --engine fast"),
               torch = gen_json(m, args + " --engine torch");
    EXPECT_EQ(ids(fast).size(), 40u) << arch;
    EXPECT_EQ(ids(fast), ids(torch)) << arch;
    EXPECT_EQ(fast["prompt_ids"].get<std::vector<int64_t>>(),
              (std::vector<int64_t>{'t', 'h', 'e', ' ', 'c', 'a', 't', ' ', 's', 'a', 't'}));
    EXPECT_EQ(fast["end_pos"].get<int64_t>(), 11 + 40 - 1) << "the last token stays pending";
    EXPECT_GT(fast["generation_tokens_per_s"].get<double>(), 0);
  }
  // Unmerged LoRA adapters are merged before decoding: both engines still agree.
  const auto ft = cli_tmp("lora");
  auto r = run_seqlab("finetune --model " + lm_model("t2r") + " --out " + ft +
                      " --adapter lora --lora-rank 2 --steps 2 --batch 4 --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string args = "--prompt 'a dog' -n 20 --temperature 0";
  EXPECT_EQ(ids(gen_json(ft, args + " --engine fast")),
            ids(gen_json(ft, args + " --engine torch")));
}

TEST(GenerateCli, StreamsTheTextAndASeedFixesTheSample) {
  const auto m = lm_model("softmax");
  const std::string args = " --prompt 'the' -n 30 --temperature 1 --top-k 50 ";
  auto a = run_seqlab("generate --model " + m + args + "--seed 1 --threads 1");
  auto b = run_seqlab("generate --model " + m + args + "--seed 1 --threads 1 -q");
  auto c = run_seqlab("generate --model " + m + args + "--seed 2 --threads 1 -q");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_NE(a.err.find("tokens/s"), std::string::npos) << "timing on stderr: " << a.err;
  EXPECT_EQ(b.err, "");
  // The streamed text is the bytes of the JSON run's ids (byte tokens; 256 is <|endoftext|>).
  const auto j = ids(gen_json(m, args + "--seed 1"));
  ASSERT_EQ(j.size(), 30u);
  std::string text;
  for (auto id : j) text += id < 256 ? std::string(1, static_cast<char>(id)) : "<|endoftext|>";
  EXPECT_EQ(a.out, text + "\n");
}

TEST(GenerateCli, PausedAndResumedEqualsUninterrupted) {
  const std::string greedy = "--temperature 0",
                    sampled = "--temperature 0.9 --top-k 40 --top-p 0.95 --seed 7";
  const auto state = cli_tmp("state.safetensors");
  for (const auto& [arch, sampling] : std::vector<std::pair<std::string, std::string>>{
           {"softmax", greedy}, {"softmax", sampled}, {"t2r", sampled}}) {
    const auto m = lm_model(arch);
    const auto whole = ids(gen_json(m, "--prompt 'the dog' -n 20 " + sampling));
    auto first = ids(gen_json(m, "--prompt 'the dog' -n 8 --save-state " + state + " " + sampling));
    ASSERT_TRUE(fs::exists(state));
    const auto rest = ids(gen_json(m, "--load-state " + state + " -n 12 " + sampling));
    first.insert(first.end(), rest.begin(), rest.end());
    EXPECT_EQ(first, whole) << arch << " " << sampling;
  }
  // Branching: the same state file twice gives the same continuation; the file is unchanged.
  const auto before = slurp_file(state);
  const std::string branch = "generate --model " + lm_model("t2r") + " --load-state " + state +
                             " -n 15 --temperature 1 --seed 3 --threads 1 -q";
  auto x = run_seqlab(branch), y = run_seqlab(branch);
  ASSERT_EQ(x.code, 0) << x.err;
  EXPECT_EQ(x.out, y.out);
  EXPECT_EQ(slurp_file(state), before);

  // A state continued with more prompt text: the pending token, then the new text, are consumed.
  const auto m = lm_model("t2r");
  const auto state2 = cli_tmp("state_prompt.safetensors");
  const auto a = gen_json(m, "--prompt 'the cat' -n 0 --save-state " + state2);
  EXPECT_EQ(ids(a).size(), 0u);
  const auto b = gen_json(m, "--load-state " + state2 + " --prompt ' sat' -n 10 --temperature 0");
  const auto c = gen_json(m, "--prompt 'the cat sat' -n 10 --temperature 0");
  EXPECT_EQ(ids(b), ids(c));
  EXPECT_EQ(b["start_pos"].get<int64_t>(), 6);
}

TEST(GenerateCli, BadInputIsAnErrorAndWritesNothing) {
  const auto sm = lm_model("softmax"), t2r = lm_model("t2r");
  const auto state = cli_tmp("bad_state.safetensors");
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--prompt-ids '1 2' --top-p 0", "--top-p"},
           {"--prompt-ids '1 2' --top-p 1.5", "--top-p"},
           {"--prompt-ids '1 2' --temperature -1", "--temperature"},
           {"--prompt-ids '1 2' --top-k -1", "--top-k"},
           {"--prompt-ids '1 2' --engine warp", "--engine"},
           {"--prompt-ids '1 2' --engine torch", "--engine fast"},
           {"--prompt-ids '1 2 999'", "999"},
           {"--prompt '" + std::string(100, 'a') + "'", "max context"},
       })
    expect_cli_error("generate --model " + sm + " -n 4 --save-state " + state + " " + args, needle);
  expect_cli_error("generate --model " + sm + " --prompt 'x' --prompt-ids '1' -n 4", "excludes");
  expect_cli_error("generate --model " + sm + " -n 4", "prompt");
  // Prompt plus new tokens longer than the max context (96: learned positions).
  expect_cli_error("generate --model " + t2r + " --prompt '" + std::string(90, 'a') + "' -n 10",
                   "max context");
  EXPECT_FALSE(fs::exists(state));

  // A model that is not a language model (a tagger).
  const auto tagger = cli_tmp("tagger");
  auto r = run_seqlab(
      "train --task parity --arch lstm --d-model 8 --n-layer 1 --steps 1 "
      "--batch 2 --threads 1 -q --out " +
      tagger);
  ASSERT_EQ(r.code, 0) << r.err;
  expect_cli_error("generate --model " + tagger + " --prompt-ids '1 0 1' -n 4",
                   "not a language model");

  // A state file of another model.
  const auto other = cli_tmp("other_state.safetensors");
  r = run_seqlab("generate --model " + sm + " --prompt 'the' -n 2 --save-state " + other + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_cli_error("generate --model " + t2r + " --load-state " + other + " -n 4",
                   "different model");
  expect_cli_error("generate --model " + sm + " --load-state " + corpus() + " -n 4", corpus());
}

// A model the fast engine does not support (a mixture of attentive experts): the default engine
// (auto) falls back to torch with one line on stderr and gives torch's tokens; an explicit
// --engine fast is an error, and so is a state file, which only the fast engine has.
TEST(GenerateCli, UnsupportedModelFallsBackToTorchOrIsAnErrorWithEngineFast) {
  const std::string args = "--prompt 'the cat' -n 12 --temperature 0";
  const auto supported = gen_json(lm_model("t2r"), args);
  EXPECT_EQ(supported["engine"], "fast") << "auto picks fast for a supported model";
  const auto m = lm_model("softmax", "--mae true");
  const auto torch = gen_json(m, args + " --engine torch");

  auto r = run_seqlab("generate --model " + m + " --threads 1 -q --json " + args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("mae = true"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("falling back to the torch engine"), std::string::npos) << r.err;
  if (r.code == 0) {
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["engine"], "torch");
    EXPECT_EQ(ids(j), ids(torch));
  }
  const auto explicit_fast = "generate --model " + m + " --engine fast " + args;
  auto e = run_seqlab(explicit_fast);
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_EQ(e.err.rfind("error: --engine fast: the fast engine does not support this model: "
                        "its config sets mae = true",
                        0),
            0u)
      << e.err;
  EXPECT_EQ(e.out, "");

  const auto state = cli_tmp("fallback_state.safetensors");
  auto s = run_seqlab("generate --model " + m + " " + args + " --save-state " + state);
  EXPECT_EQ(s.code, 2) << s.err;
  EXPECT_NE(s.err.find("need the fast engine"), std::string::npos) << s.err;
  EXPECT_EQ(s.out, "");
  EXPECT_FALSE(fs::exists(state));
}
