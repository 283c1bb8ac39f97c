// seqlab eval --engine fast: the fast decoder's perplexity from the command line, against the
// torch engine's on the same model and windows; the json fields; the errors for what the fast
// engine cannot measure (a model it cannot run, a non-lm model, options that need torch).
#include "cli_testing.h"
#include "word_corpus_testing.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace seqlab::testing;

namespace {

std::string corpus() {
  static const std::string path = [] {
    const auto p = cli_tmp("fast_eval_corpus.txt");
    write_word_corpus(p, 300);
    return p;
  }();
  return path;
}

std::string train(const std::string& name, const std::string& flags) {
  const auto d = cli_tmp("fast_eval_" + name);
  auto r = run_seqlab("train " + flags +
                      " --d-model 32 --n-head 2 --n-layer 2 --min-len 24 --max-len 24 "
                      "--steps 20 --batch 8 --lr 3e-3 --warmup 5 --eval-every 20 --eval-size 8 "
                      "--threads 1 -q --out " +
                      d);
  EXPECT_EQ(r.code, 0) << r.err;
  return d;
}

std::string lm_model(const std::string& arch, const std::string& extra = "") {
  return train(arch + (extra.empty() ? "" : "_x"),
               "--task lm --corpus " + corpus() + " --tokenizer byte --arch " + arch + " " + extra);
}

nlohmann::json eval_json(const std::string& model, const std::string& args) {
  auto r = run_seqlab("eval --model " + model + " --json --threads 1 -q " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  if (r.code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST(FastEvalCli, FastPerplexityEqualsTorchWithTheSameFieldsPlusEngineAndWeights) {
  for (const std::string arch : {"softmax", "t2r"}) {
    const auto m = lm_model(arch);
    for (const std::string args : {"", "--split test --context 11 --max-tokens 300 --batch 3"}) {
      const auto torch = eval_json(m, args);
      const auto fast = eval_json(m, args + " --engine fast");
      ASSERT_TRUE(fast.contains("ppl")) << fast.dump();
      EXPECT_NEAR(fast["ppl"].get<double>(), torch["ppl"].get<double>(),
                  1e-4 * torch["ppl"].get<double>())
          << arch << " " << args;
      EXPECT_EQ(fast["tokens"], torch["tokens"]);
      for (const auto& [key, value] : torch.items())
        if (key != "ppl" && key != "nll") EXPECT_EQ(fast[key], value) << key;
      EXPECT_EQ(fast.size(), torch.size() + 2) << fast.dump();
      EXPECT_EQ(fast["engine"], "fast");
      EXPECT_EQ(fast["weights"], "f32");
      EXPECT_FALSE(torch.contains("engine")) << "the torch engine's output is unchanged";
    }
    auto r = run_seqlab("eval --model " + m + " --engine fast --threads 1 -q");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("valid perplexity"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fast engine, f32 weights"), std::string::npos) << r.out;
  }
}

// The narrow formats (issue 35): perplexity close to f32's, and not identical (the weights really
// changed): bf16 within 1%, int8 within 2% on these tiny byte-level models.
TEST(FastEvalCli, NarrowWeightsStayCloseToF32) {
  const auto m = lm_model("softmax");
  const auto f32 = eval_json(m, "--engine fast");
  ASSERT_TRUE(f32.contains("ppl")) << f32.dump();
  const double p = f32["ppl"].get<double>();
  for (const auto& [w, tol] : {std::pair<std::string, double>{"bf16", 0.01}, {"int8", 0.02}}) {
    const auto q = eval_json(m, "--engine fast --weights " + w);
    ASSERT_TRUE(q.contains("ppl")) << q.dump();
    EXPECT_EQ(q["weights"], w);
    EXPECT_NEAR(q["ppl"].get<double>(), p, tol * p) << w;
    EXPECT_NE(q["ppl"].get<double>(), p) << w << " changed nothing";
  }
}

TEST(FastEvalCli, WhatTheFastEngineCannotMeasureIsAClearError) {
  const auto lm = lm_model("softmax");
  // A model the fast decoder cannot run: the reason is fast_support()'s.
  const auto mae = lm_model("softmax", "--mae true");
  expect_cli_error("eval --model " + mae + " --engine fast", "the fast decoder cannot run model");
  expect_cli_error("eval --model " + mae + " --engine fast", "mae = true");
  // Not a language model.
  const auto tagger = train("parity", "--task parity --arch softmax");
  expect_cli_error("eval --model " + tagger + " --engine fast", "its head is 'tag'");
  expect_cli_error("eval --model " + lm + " --engine jax", "--engine must be torch or fast");
  expect_cli_error("eval --model " + lm + " --weights int4 --engine fast", "int4");
  expect_cli_error("eval --model " + lm + " --weights bf16", "needs --engine fast");
  expect_cli_error("eval --model " + lm + " --engine fast --by-position 8",
                   "--by-position needs --engine torch");
}
