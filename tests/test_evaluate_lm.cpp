// Perplexity evaluation: evaluate_lm against a token-by-token reference, and the CLI end to end
// (train --task lm writes eval_ppl; eval prints perplexity).
#include "cli_testing.h"
#include "seqlab/train/evaluate_lm.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/registry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("seqlab_test_evaluate_lm." + std::to_string(getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// 300 lines of words: about 15 lines in each of valid and test.
std::string corpus_file() {
  const auto path = scratch() / "corpus.txt";
  if (!fs::exists(path)) {
    std::ofstream out(path);
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
    for (int i = 0; i < 300; ++i) {
      out << i;  // distinct lines, so they spread over the splits
      for (int j = 0; j < 4 + i % 5; ++j) out << " " << words[(i * 7 + j * 3) % 10];
      out << "\n";
    }
  }
  return path.string();
}

std::unique_ptr<Task> lm_task(int64_t max_len) {
  TaskConfig c;
  c.task = "lm";
  c.corpus = corpus_file();
  c.tokenizer = "byte";
  c.max_len = max_len;
  return make_task(c);
}

SeqModel tiny_model(const std::string& arch) {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 16;
  c.mixer.n_head = 2;
  c.mixer.max_len = 64;
  c.n_layer = 1;
  c.vocab_size = 257;
  c.head = "lm";
  c.validate();
  torch::manual_seed(3);
  return SeqModel(c);
}

// The reference: every window on its own, batch 1, log-probabilities read token by token.
double reference_nll(SeqModelImpl& m, const std::vector<int64_t>& s, int64_t context, int64_t n) {
  torch::NoGradGuard ng;
  double sum = 0;
  for (int64_t w = 0; w < n - 1; w += context) {
    const int64_t len = std::min(context, n - 1 - w);
    auto input = torch::tensor(std::vector<int64_t>(s.begin() + w, s.begin() + w + len))
                     .unsqueeze(0);                                              // [1,len]
    auto logp = torch::log_softmax(m.forward(input)[0].to(torch::kDouble), -1);  // [len,V]
    for (int64_t t = 0; t < len; ++t) sum -= logp[t][s[w + t + 1]].item<double>();
  }
  return sum / static_cast<double>(n - 1);
}

}  // namespace

TEST(EvaluateLm, EqualsTheTokenByTokenReference) {
  auto task = lm_task(16);
  const auto& lm = dynamic_cast<const LmTask&>(*task);
  for (const std::string arch : {"lstm", "softmax"}) {
    auto model = tiny_model(arch);
    model->eval();
    for (Split split : {Split::valid, Split::test}) {
      const auto& s = lm.tokens(split);
      const int64_t n = static_cast<int64_t>(s.size());
      for (int64_t context : {16, 13}) {
        const double want = reference_nll(*model, s, context, n);
        for (int64_t batch : {1, 3, 64}) {
          auto r = evaluate_lm(*model, lm, split, context, batch);
          EXPECT_EQ(r.tokens, n - 1);
          EXPECT_NEAR(r.nll, want, 1e-5 * want)
              << arch << " " << split_name(split) << " context " << context << " batch " << batch;
          EXPECT_DOUBLE_EQ(r.ppl, std::exp(r.nll));
        }
      }
      // Only the first max_tokens tokens are read.
      auto r = evaluate_lm(*model, lm, split, 16, 4, 50);
      EXPECT_EQ(r.tokens, 49);
      EXPECT_NEAR(r.nll, reference_nll(*model, s, 16, 50), 1e-5 * r.nll);
    }
  }
}

TEST(EvaluateLm, UntrainedModelIsNearUniformAndTrainingModeIsKept) {
  auto task = lm_task(16);
  auto model = tiny_model("lstm");
  model->train();
  auto r = evaluate_lm(*model, dynamic_cast<const LmTask&>(*task), Split::valid, 16, 8);
  EXPECT_TRUE(model->is_training());
  // A freshly initialised model is close to uniform over 257 tokens.
  EXPECT_GT(r.ppl, 100);
  EXPECT_LT(r.ppl, 600);
}

TEST(EvaluateLm, BadArgumentsAreErrors) {
  auto task = lm_task(16);
  const auto& lm = dynamic_cast<const LmTask&>(*task);
  auto model = tiny_model("lstm");
  EXPECT_THROW(evaluate_lm(*model, lm, Split::valid, 0, 8), Error);
  EXPECT_THROW(evaluate_lm(*model, lm, Split::valid, 16, 0), Error);
  EXPECT_THROW(evaluate_lm(*model, lm, Split::valid, 16, 8, 1), Error);
  EXPECT_THROW(evaluate_lm(*model, lm, Split::valid, 16, 8, -1), Error);
}

// ---- the CLI ----

TEST(EvaluateLmCli, TrainWritesEvalPplAndEvalPrintsPerplexity) {
  const auto out = (scratch() / "run").string();
  fs::remove_all(out);
  auto r = seqlab::testing::run_seqlab(
      "train --task lm --corpus " + corpus_file() +
      " --arch lstm --d-model 16 --n-layer 1 --batch 8 --threads 1 -q --steps 6 "
      "--eval-every 3 --eval-size 16 --min-len 16 --max-len 16 --json --out " +
      out);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto summary = nlohmann::json::parse(r.out);
  const double final_ppl = summary.at("eval_ppl").get<double>();
  EXPECT_GT(final_ppl, 1.0);
  EXPECT_LT(final_ppl, 600.0);

  std::istringstream metrics(slurp(fs::path(out) / "metrics.jsonl"));
  std::vector<int64_t> eval_steps;
  double last = 0;
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    if (!j.contains("eval_ppl")) continue;
    eval_steps.push_back(j["step"].get<int64_t>());
    last = j["eval_ppl"].get<double>();
  }
  EXPECT_EQ(eval_steps, (std::vector<int64_t>{3, 6}));
  EXPECT_DOUBLE_EQ(last, final_ppl);

  // eval: the same perplexity (the whole valid split fits in the trainer's 64 Ki-token cap).
  r = seqlab::testing::run_seqlab("eval --model " + out + " --json --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  for (const char* key : {"task", "arch", "split", "ppl", "nll", "tokens"})
    EXPECT_TRUE(doc.contains(key)) << key << " missing in " << r.out;
  EXPECT_EQ(doc.size(), 6u) << r.out;
  EXPECT_EQ(doc["task"], "lm");
  EXPECT_EQ(doc["arch"], "lstm");
  EXPECT_EQ(doc["split"], "valid");
  EXPECT_NEAR(doc["ppl"].get<double>(), final_ppl, 1e-4 * final_ppl);
  EXPECT_NEAR(doc["ppl"].get<double>(), std::exp(doc["nll"].get<double>()), 1e-9 * final_ppl);
  auto task = lm_task(16);
  const auto& lm = dynamic_cast<const LmTask&>(*task);
  EXPECT_EQ(doc["tokens"].get<int64_t>(), static_cast<int64_t>(lm.tokens(Split::valid).size()) - 1);

  r = seqlab::testing::run_seqlab("eval --model " + out +
                                  " --split test --max-tokens 40 --json --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["split"], "test");
  EXPECT_EQ(doc["tokens"].get<int64_t>(), 39);

  r = seqlab::testing::run_seqlab("eval --model " + out + " --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid perplexity"), std::string::npos) << r.out;

  r = seqlab::testing::run_seqlab("eval --model " + out + " --split dev -q");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

TEST(EvaluateLmCli, BadCorpusOrTokenizerIsAnErrorAndWritesNothing) {
  const auto out = (scratch() / "bad").string();
  const std::vector<std::string> cases = {"--corpus " + corpus_file() + " --tokenizer nonsense",
                                          "--corpus /nonexistent/file.txt",
                                          "--corpus " + corpus_file() + " --max-len 100000"};
  for (const auto& flags : cases) {
    auto r = seqlab::testing::run_seqlab("train --task lm " + flags +
                                         " --steps 2 --threads 1 -q --out " + out);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << flags;
  }
}
