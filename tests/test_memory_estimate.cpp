// The up-front memory check (train/memory_estimate.h): how the estimate scales, the refusal, and
// that it is within 2x of what a real training run measures.
#include "cli_testing.h"

#include "seqlab/train/memory_estimate.h"

#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <sstream>

using namespace seqlab;

namespace {

ModelConfig config(const std::string& arch, int64_t d, int64_t layers) {
  ModelConfig m;
  m.mixer.arch = arch;
  m.mixer.d_model = d;
  m.mixer.n_head = 4;
  m.mixer.max_len = 2048;
  m.n_layer = layers;
  m.vocab_size = 2;
  m.n_classes = 2;
  m.head = "tag";
  return m;
}

// Peak resident memory (KB) of one `seqlab <args>` process.
long peak_kb(const std::string& args) {
  std::vector<std::string> a = {seqlab::testing::seqlab_bin()};
  std::istringstream in(args);
  for (std::string w; in >> w;) a.push_back(w);
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  int status = 0;
  rusage ru{};
  EXPECT_EQ(wait4(pid, &status, 0, &ru), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << args;
  return ru.ru_maxrss;
}

}  // namespace

TEST(MemoryEstimate, ScalesWithBatchLengthAndAttention) {
  auto s = config("softmax", 64, 2), l = config("linear", 64, 2);
  const auto a = estimate_training_memory(s, 8, 128), b = estimate_training_memory(s, 16, 128);
  EXPECT_NEAR(b.activations / a.activations, 2.0, 1e-9);  // linear in the batch
  EXPECT_EQ(a.weights, b.weights);
  // Softmax keeps B*H*T*T scores: doubling T more than doubles it; chunked linear attention
  // grows linearly once T passes the chunk.
  const auto s2 = estimate_training_memory(s, 8, 256);
  EXPECT_GT(s2.activations / a.activations, 2.5);
  const auto l1 = estimate_training_memory(l, 8, 512), l2 = estimate_training_memory(l, 8, 1024);
  EXPECT_NEAR(l2.activations / l1.activations, 2.0, 0.05);
  // Frozen base weights (adapter finetuning) need no gradient or optimizer state.
  EXPECT_NEAR(estimate_training_memory(s, 8, 128, true).weights / a.weights, 0.25, 1e-9);
}

TEST(MemoryEstimate, RefusesWhatTheMachineCannotHold) {
  const auto e = estimate_training_memory(config("softmax", 64, 2), 8, 128);
  EXPECT_NO_THROW(check_training_fits(e, e.total() * 1.01));
  EXPECT_NO_THROW(check_training_fits(e, 0));  // unknown machine: no refusal
  // Workers sharing the machine count once each.
  EXPECT_THROW(check_training_fits(e, e.total() * 1.5, 2), Error);
  try {
    check_training_fits(e, e.total() / 2);
    FAIL() << "no refusal";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("needs an estimated"), std::string::npos);
  }
  EXPECT_GT(machine_memory_bytes(), 1e8);
  // Through the CLI: refused at once, before the model is allocated.
  seqlab::testing::expect_cli_error(
      "train --task parity --arch softmax --d-model 1024 --n-layer 48 --batch 4096 --max-len 2048 "
      "--out " +
          seqlab::testing::cli_tmp("huge"),
      "this run needs an estimated");
}

TEST(MemoryEstimate, IsWithinTwiceTheMeasuredPeakOfARealRun) {
  const std::string common =
      "train --task parity --n-head 4 --threads 1 --eval-size 4 -q --steps 2 ";
  const long base = peak_kb(common +
                            "--arch gru --d-model 16 --n-layer 1 --batch 2 --max-len 8 "
                            "--out " +
                            seqlab::testing::cli_tmp("base"));
  const long peak = peak_kb(common +
                            "--arch softmax --d-model 128 --n-layer 2 --batch 16 "
                            "--min-len 256 --max-len 256 --out " +
                            seqlab::testing::cli_tmp("big"));
  auto m = config("softmax", 128, 2);
  const double est = estimate_training_memory(m, 16, 256).total() / 1024.0;  // KB
  const double measured = static_cast<double>(peak - base);
  EXPECT_GT(est, measured / 2) << "estimate " << est << " KB, measured " << measured << " KB";
  EXPECT_LT(est, measured * 2) << "estimate " << est << " KB, measured " << measured << " KB";
}
