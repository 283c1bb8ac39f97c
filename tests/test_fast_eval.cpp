// Perplexity on the fast decoder (infer/fast_eval.h) against the torch engine's evaluate_lm
// (train/evaluate_lm.h), its reference: on small models of each mixer kind the conversion suite
// ships (softmax, T2R, Hedgehog, the hybrid), trained for a few steps so the logits are far from
// uniform, the fast f32 perplexity equals the torch one within 1e-4 (relative) on the same windows,
// with a short last window and with max_tokens; the batch size (windows per step_batch) does not
// change the result at all.
//
// V = vocabulary (257 bytes), T = window length.
#include "seqlab/infer/fast_eval.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate_lm.h"

#include "seqlab/core/error.h"

#include "word_corpus_testing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

constexpr double kTol = 1e-4;  // |fast - torch| / torch, perplexity

// 400 lines of words (about 20 in each of valid and test): structure a few steps can learn.
std::string corpus_file() {
  static const std::string path = [] {
    const auto dir =
        fs::temp_directory_path() / ("seqlab_test_fast_eval." + std::to_string(getpid()));
    fs::create_directories(dir);
    const auto p = (dir / "corpus.txt").string();
    seqlab::testing::write_word_corpus(p, 400);
    return p;
  }();
  return path;
}

const LmTask& lm_task() {
  static const std::unique_ptr<Task> task = [] {
    TaskConfig c;
    c.task = "lm";
    c.corpus = corpus_file();
    c.tokenizer = "byte";
    c.max_len = 24;
    return make_task(c);
  }();
  return dynamic_cast<const LmTask&>(*task);
}

struct Kind {
  std::string name, arch, feature_map;
  int64_t window = 0;
};

ModelConfig config(const Kind& k) {
  ModelConfig c;
  c.mixer.arch = k.arch;
  if (!k.feature_map.empty()) c.mixer.feature_map = k.feature_map;
  c.mixer.window = k.window;
  c.mixer.d_model = 32;
  c.mixer.n_head = 2;
  c.mixer.max_len = 64;
  c.n_layer = 2;
  c.vocab_size = 257;
  c.head = "lm";
  c.validate();
  return c;
}

// A few Adam steps on windows of the train split: logits far from uniform, so that a wrong window
// or a wrong target shows in the perplexity.
SeqModel trained_model(const Kind& k) {
  torch::manual_seed(7);
  SeqModel m(config(k));
  const auto& s = lm_task().tokens(Split::train);
  const int64_t T = 24, B = 8;
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-2));
  m->train();
  for (int64_t step = 0; step < 40; ++step) {
    auto x = torch::empty({B, T + 1}, torch::kLong);  // [B,T+1]
    auto acc = x.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t at = ((step * B + b) * 37) % (static_cast<int64_t>(s.size()) - T - 1);
      for (int64_t t = 0; t <= T; ++t) acc[b][t] = s[at + t];
    }
    auto logits = m->forward(x.slice(1, 0, T));  // [B,T,V]
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                     x.slice(1, 1).reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  m->eval();
  return m;
}

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {{"softmax", "softmax", ""},
                                      {"t2r", "linear", "t2r"},
                                      {"hedgehog", "linear", "hedgehog"},
                                      {"hybrid", "hybrid", "hedgehog", 4}};
  return k;
}

}  // namespace

TEST(FastEval, F32PerplexityEqualsTheTorchEngineOnEveryMixerKind) {
  const auto& task = lm_task();
  for (const auto& k : kinds()) {
    auto model = trained_model(k);
    ASSERT_EQ(infer::fast_support(*model), "") << k.name;
    infer::FastModel fast(*model);
    for (Split split : {Split::valid, Split::test}) {
      const auto& s = task.tokens(split);
      // 24: the training length; 13: the last window shorter than the rest.
      for (int64_t context : {24, 13}) {
        const auto want = evaluate_lm(*model, task, split, context, 16);
        EXPECT_LT(want.ppl, 40) << k.name << ": the model did not learn; the test would be weak";
        infer::FastLmEval first;
        for (int64_t batch : {1, 5, 1000}) {
          const auto got = infer::fast_perplexity(fast, s, context, batch, 0, "split");
          EXPECT_EQ(got.tokens, want.tokens);
          EXPECT_NEAR(got.ppl, want.ppl, kTol * want.ppl)
              << k.name << " " << split_name(split) << " context " << context << " batch " << batch;
          EXPECT_DOUBLE_EQ(got.ppl, std::exp(got.nll));
          if (batch == 1) first = got;
          EXPECT_EQ(got.nll, first.nll) << k.name << ": batch " << batch << " changed the result";
        }
      }
      // Only the first max_tokens tokens are read.
      const auto want = evaluate_lm(*model, task, split, 24, 4, 61);
      const auto got = infer::fast_perplexity(fast, s, 24, 4, 61, "split");
      EXPECT_EQ(got.tokens, 60);
      EXPECT_NEAR(got.ppl, want.ppl, kTol * want.ppl) << k.name << " max_tokens 61";
    }
  }
}

// token_nll against LibTorch's log_softmax on logits with a wide range (the max shift matters).
TEST(FastEval, TokenNllEqualsLogSoftmax) {
  torch::manual_seed(1);
  auto logits = (torch::randn({300}) * 30).contiguous();  // [V]
  const auto logp = torch::log_softmax(logits.to(torch::kDouble), 0);
  for (int64_t t : {0, 17, 299})
    EXPECT_NEAR(infer::token_nll(logits.data_ptr<float>(), 300, t), -logp[t].item<double>(), 1e-9)
        << t;
  EXPECT_THROW(infer::token_nll(logits.data_ptr<float>(), 300, 300), Error);
  EXPECT_THROW(infer::token_nll(logits.data_ptr<float>(), 300, -1), Error);
}

TEST(FastEval, BadArgumentsAreErrors) {
  auto model = trained_model(kinds()[1]);
  infer::FastModel fast(*model);
  const std::vector<int64_t> s = {1, 2, 3, 4, 5};
  EXPECT_THROW(infer::fast_perplexity(fast, s, 0, 4, 0, "s"), Error);
  EXPECT_THROW(infer::fast_perplexity(fast, s, 4, 0, 0, "s"), Error);
  EXPECT_THROW(infer::fast_perplexity(fast, s, 4, 4, -1, "s"), Error);
  try {
    infer::fast_perplexity(fast, s, 4, 4, 1, "the tiny stream");
    ADD_FAILURE() << "one token is not enough";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the tiny stream has 1 tokens"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(infer::fast_perplexity(fast, {1, 2, 900}, 4, 4, 0, "s"), Error);  // past V
}
