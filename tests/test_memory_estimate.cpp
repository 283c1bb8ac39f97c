// The up-front memory check (train/memory_estimate.h): how the estimate scales, the refusal, and
// that it is within 2x of what a real training run measures.
#include "cli_testing.h"
#include "spawn_testing.h"

#include "seqlab/train/memory_estimate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

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

// Peak resident memory (KB) of one `seqlab <args> --json` process (a train command), as it
// reports it: its own VmHWM. Started with posix_spawn, like a suite worker: wait4's ru_maxrss (or
// the child's getrusage) would start at this test process's peak, so after the earlier tests in
// the same process every run would read the same number.
long peak_kb(const std::string& args) {
  const auto r = seqlab::testing::spawn_seqlab(args + " --json");
  EXPECT_EQ(r.code, 0) << args;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("peak_rss_mb")) << args << "\n" << r.out;
  return j.is_object() ? std::lround(j.value("peak_rss_mb", 0.0) * 1024) : 0;
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

// `train --json` reports the run's own peak (VmHWM). This test process first raises its own peak
// by 1 GiB: a run it then starts through posix_spawn would read at least that from getrusage (its
// maxrss starts at this process's peak), while the run itself stays far below.
TEST(MemoryEstimate, TrainReportsItsOwnPeak) {
  seqlab::testing::raise_own_peak(1024);
  const long kb = peak_kb(
      "train --task parity --arch gru --d-model 16 --n-layer 1 --batch 2 --max-len 8 --steps 2 "
      "--threads 1 --eval-size 4 -q --out " +
      seqlab::testing::cli_tmp("own_peak"));
  EXPECT_GT(kb, 10 * 1024);   // at least the runtime
  EXPECT_LT(kb, 700 * 1024);  // a 2-step GRU run: about 160 MB here, far below 1 GiB
}

// A mae_deq suite worker's run memory starts from its own peak, not the suite process's: after
// this process's peak is raised by 1 GiB, a two-step cell spawned as the suite spawns it reads its
// start and peak far below that (with getrusage both read above 1 GiB and the difference 0).
TEST(MemoryEstimate, SuiteWorkerMeasuresItsOwnPeak) {
  seqlab::testing::raise_own_peak(1024);
  const auto dir = seqlab::testing::cli_tmp("worker_peak");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/cell.json")
      << R"({"kind": "mae_deq", "id": "mix_mha_t", "group": "mix", "label": "t",
    "model": {"arch": "softmax", "d_model": 32, "n_head": 2, "n_layer": 1, "max_context": 22,
              "head": "lm"},
    "task": {"task": "copy_reverse_sort", "min_len": 11, "max_len": 22},
    "train": {"batch": 8, "steps": 2, "lr": 0.001, "eval_every": 2, "eval_size": 8,
              "log_every": 1, "threads": 1, "seed": 0},
    "eval_size": 8})";
  const auto r = seqlab::testing::spawn_seqlab("suite-cell --cell " + dir + "/cell.json --out " +
                                               dir + "/run --threads 1 -q");
  ASSERT_EQ(r.code, 0);
  const auto row = nlohmann::json::parse(seqlab::testing::slurp_file(dir + "/cell.result.json"))
                       .at("rows")
                       .at(0);
  EXPECT_LT(row.at("rss_start_mb").get<double>(), 700) << row.dump();
  EXPECT_LT(row.at("rss_peak_mb").get<double>(), 700) << row.dump();
  EXPECT_GT(row.at("train_mem_mb").get<double>(), 0) << row.dump();
}
