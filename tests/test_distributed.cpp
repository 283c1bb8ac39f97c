// Data-parallel training (train/distributed.h, train/launch.h) on loopback: the collectives, the
// rendezvous errors, and end to end through the CLI: 2 workers with batch B reach the weights of
// 1 process with batch B; a killed worker stops the others with a clear error, and --resume then
// finishes bitwise like an uninterrupted 2-worker run.
#include "cli_testing.h"
#include "weights_testing.h"

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/distributed.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <regex>
#include <thread>

using namespace seqlab;
namespace fs = std::filesystem;
using seqlab::testing::checkpoint_weights;
using seqlab::testing::cli_tmp;
using seqlab::testing::expect_cli_error;
using seqlab::testing::gradient_free;
using seqlab::testing::run_seqlab;
using seqlab::testing::worst_weight_diff;

namespace {

DistConfig local(int64_t rank, int64_t world, int port, double timeout = 20) {
  DistConfig c;
  c.rank = rank;
  c.world_size = world;
  c.master_addr = "127.0.0.1";
  c.master_port = port;
  c.timeout = timeout;
  return c.resolved();
}

// Runs f(rank) for every rank on its own thread (each joins the group itself); returns each
// rank's error message ("" = none).
std::vector<std::string> on_ranks(const std::vector<DistConfig>& cfgs,
                                  const std::function<void(DataParallel&)>& f) {
  std::vector<std::string> errors(cfgs.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < cfgs.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        DataParallel dp(cfgs[r]);
        f(dp);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST(Shards, CoverTheBatchContiguouslyAndInOrder) {
  for (int64_t world : {1, 2, 3, 4})
    for (int64_t batch = world; batch <= 11; ++batch) {
      int64_t next = 0;
      for (int64_t r = 0; r < world; ++r) {
        auto [lo, hi] = shard_rows(batch, r, world);
        EXPECT_EQ(lo, next);
        EXPECT_GE(hi - lo, batch / world);
        EXPECT_LE(hi - lo, batch / world + 1);
        next = hi;
      }
      EXPECT_EQ(next, batch);
    }
  EXPECT_THROW(shard_rows(1, 0, 2), Error);
}

// The scaled shard losses sum to the whole batch's loss, for masked (per-position) and pooled
// (per-sequence) tasks, which is what makes the summed gradient the one-process gradient.
TEST(Shards, ScaledShardLossesSumToTheBatchLoss) {
  for (const std::string name : {"mqar", "dyck_bounded", "parity"}) {
    TaskConfig tc;
    tc.task = name;
    auto task = make_task(tc);
    const int64_t T = name == "dyck_bounded" ? 12 : 16;
    auto b = task->sample(7, T, 5);
    torch::manual_seed(1);
    auto logits = b.target.dim() == 1 ? torch::randn({7, task->n_classes()})
                                      : torch::randn({7, T, task->vocab_size()});
    const double whole = task_loss(logits, b).item<double>();
    const double all = static_cast<double>(scored_count(b));
    double sum = 0;
    for (int64_t r = 0; r < 3; ++r) {
      auto [lo, hi] = shard_rows(7, r, 3);
      auto s = slice_rows(b, lo, hi);
      EXPECT_EQ(s.input.size(0), hi - lo);
      EXPECT_TRUE(torch::equal(s.input, b.input.slice(0, lo, hi)));
      sum += task_loss(logits.slice(0, lo, hi), s).item<double>() * scored_count(s) / all;
    }
    EXPECT_NEAR(sum, whole, 1e-5 * std::abs(whole)) << name;
  }
}

TEST(DataParallel, CollectivesSumAndBroadcastAcrossRanks) {
  const int port = free_local_port();
  auto errors = on_ranks({local(0, 3, port), local(1, 3, port), local(2, 3, port)}, [](DataParallel&
                                                                                           dp) {
    const double r = static_cast<double>(dp.rank());
    // Three tensors over buckets of 64 bytes: each its own bucket,
    // and one larger than a bucket.
    std::vector<torch::Tensor> t = {torch::full({3}, r), torch::full({40}, 2 * r),
                                    torch::full({2, 2}, r + 1)};
    dp.allreduce_sum(t, 64);
    EXPECT_TRUE(torch::equal(t[0], torch::full({3}, 3.0f)));
    EXPECT_TRUE(torch::equal(t[1], torch::full({40}, 6.0f)));
    EXPECT_TRUE(torch::equal(t[2], torch::full({2, 2}, 6.0f)));
    // Several tensors in one bucket (3 + 4 floats in 64 bytes).
    std::vector<torch::Tensor> m = {torch::arange(3).to(torch::kFloat) + r,
                                    torch::full({4}, r * r)};
    dp.allreduce_sum(m, 64);
    EXPECT_TRUE(torch::equal(m[0], torch::tensor({3.0f, 6.0f, 9.0f})));
    EXPECT_TRUE(torch::equal(m[1], torch::full({4}, 5.0f)));
    std::vector<torch::Tensor> u = {torch::full({5}, r), torch::full({1}, r * 10).to(torch::kLong)};
    dp.broadcast(u);
    EXPECT_TRUE(torch::equal(u[0], torch::zeros({5})));
    EXPECT_EQ(u[1].item<int64_t>(), 0);
    auto v = dp.allreduce_values({r, 1.5});
    EXPECT_EQ(v[0], 3.0);
    EXPECT_EQ(v[1], 4.5);
    EXPECT_EQ(dp.share("k", dp.root() ? "from rank 0" : ""), "from rank 0");
    dp.barrier();
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(DataParallel, RendezvousErrorsSayWhatIsWrong) {
  // Nobody serves the port.
  auto e = on_ranks({local(1, 2, free_local_port(), 1)}, [](DataParallel&) {});
  EXPECT_NE(e[0].find("rank 1 cannot reach the master at 127.0.0.1:"), std::string::npos) << e[0];
  // Rank 0 waits for a worker that never comes.
  e = on_ranks({local(0, 2, free_local_port(), 1)}, [](DataParallel&) {});
  EXPECT_NE(e[0].find("only 1 of 2 workers joined"), std::string::npos) << e[0];
  EXPECT_NE(e[0].find("missing rank 1"), std::string::npos) << e[0];
  // Workers that disagree on the world size: both say so.
  const int port = free_local_port();
  e = on_ranks({local(0, 2, port, 5), local(1, 3, port, 5)}, [](DataParallel&) {});
  for (auto& m : e)
    EXPECT_NE(m.find("world size mismatch: rank 0 has --world-size 2, rank 1 has 3"),
              std::string::npos)
        << m;
  // Rank 0's failure before it shares the configs reaches the others as its message.
  const int port2 = free_local_port();
  e = on_ranks({local(0, 2, port2), local(1, 2, port2)}, [](DataParallel& dp) {
    if (dp.root())
      dp.publish_error("configs", "bad --lr");
    else
      dp.share("configs", "");
  });
  EXPECT_EQ(e[0], "");
  EXPECT_EQ(e[1], "rank 0 stopped: bad --lr");
  // Bad settings.
  EXPECT_THROW(local(2, 2, 1234), Error);
  EXPECT_THROW(local(0, 2, 70000), Error);
}

namespace {

// mqar scores a varying number of positions per row, so the shards' losses need their weights.
const std::string kBase =
    "train --task mqar --arch softmax --d-model 16 --n-head 2 --n-layer 1 --batch 6 "
    "--min-len 12 --max-len 16 --warmup 2 --eval-size 8 --threads 1 -q ";
const std::string kRun = kBase + "--lr 3e-3 ";

bool bitwise_equal(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (auto& [k, v] : a)
    if (!b.count(k) || !torch::equal(v, b.at(k))) return false;
  return true;
}

}  // namespace

TEST(DataParallelCli, TwoWorkersMatchOneProcessWithTheSameGlobalBatch) {
  const auto one = cli_tmp("one"), two = cli_tmp("two");
  auto r1 = run_seqlab(kRun + "--steps 15 --out " + one);
  ASSERT_EQ(r1.code, 0) << r1.err;
  auto r2 = run_seqlab(kRun + "--steps 15 --nproc 2 --out " + two);
  ASSERT_EQ(r2.code, 0) << r2.err;
  // One summary line on stdout (rank 0's), as from one process.
  EXPECT_EQ(std::count(r2.out.begin(), r2.out.end(), '\n'), 2) << r2.out;
  const auto a = checkpoint_weights(one), b = checkpoint_weights(two);
  {
    const auto d = worst_weight_diff(a, b, gradient_free);
    EXPECT_LT(d.value, 1e-5) << d.tensor;
  }
  // The weights moved: the comparison is not between two initialisations.
  const auto init = cli_tmp("init");
  ASSERT_EQ(run_seqlab(kBase + "--steps 1 --lr 1e-12 --out " + init).code, 0);
  EXPECT_GT(worst_weight_diff(a, checkpoint_weights(init), gradient_free).value, 1e-2);
  // Rank 0 alone wrote the directory and its metrics; the configs are the one-process run's.
  EXPECT_EQ(read_config_json(one)["train"], read_config_json(two)["train"]);
}

TEST(DataParallelCli, AKilledWorkerStopsTheOthersAndResumeFinishesTheRun) {
  const auto whole = cli_tmp("whole"), cut = cli_tmp("cut");
  const std::string args = kRun + "--steps 12 --checkpoint-every 4 --nproc 2 ";
  ASSERT_EQ(run_seqlab(args + "--out " + whole).code, 0);

  setenv("SEQLAB_TEST_DIE_AT_STEP", "6", 1);
  setenv("SEQLAB_TEST_DIE_RANK", "1", 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_seqlab(args + "--out " + cut);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("SEQLAB_TEST_DIE_AT_STEP");
  unsetenv("SEQLAB_TEST_DIE_RANK");
  EXPECT_EQ(r.code, 2) << r.err;
  // Rank 0 names the lost peer; the launcher names the worker and how it ended.
  EXPECT_NE(r.err.find("data-parallel rank 0:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data-parallel worker rank 1 was killed by signal 9"), std::string::npos)
      << r.err;
  EXPECT_LT(took, 60) << "the surviving worker must not hang";
  // The launcher reports how long the others took to stop after the lost worker; they fail at
  // their next all-reduce, not after --dist-timeout.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("stopped ([0-9.]+) s later"))) << r.err;
  EXPECT_LT(std::stod(m[1]), 10.0) << r.err;
  // The checkpoint at step 4 is intact and --resume finishes bitwise like the whole run.
  EXPECT_NO_THROW(load_model_dir(cut));
  auto res = run_seqlab(kRun + "--steps 12 --nproc 2 --resume --out " + cut);
  ASSERT_EQ(res.code, 0) << res.err;
  EXPECT_TRUE(bitwise_equal(checkpoint_weights(whole), checkpoint_weights(cut)));
}

// SWAG's constant learning rate applies on every worker (only rank 0 keeps the moments).
TEST(DataParallelCli, SwagRunsMatchOneProcess) {
  const std::string swag = "--steps 12 --swag-start 6 --swag-every 2 --swag-lr 1e-3 ";
  const auto one = cli_tmp("swag1"), two = cli_tmp("swag2");
  ASSERT_EQ(run_seqlab(kRun + swag + "--out " + one).code, 0);
  auto r = run_seqlab(kRun + swag + "--nproc 2 --out " + two);
  ASSERT_EQ(r.code, 0) << r.err;
  {
    const auto d =
        worst_weight_diff(checkpoint_weights(one), checkpoint_weights(two), gradient_free);
    EXPECT_LT(d.value, 1e-5) << d.tensor;
  }
  EXPECT_TRUE(fs::exists(fs::path(two) / "swag.safetensors"));
}

TEST(DataParallelCli, BadSettingsAreClearErrors) {
  const std::string args = kRun + "--steps 3 --out " + cli_tmp("bad");
  expect_cli_error(args + " --rank 1 --world-size 2 --master-port " +
                       std::to_string(free_local_port()) + " --dist-timeout 1",
                   "rank 1 cannot reach the master at 127.0.0.1:");
  expect_cli_error(args + " --rank 2 --world-size 2", "--rank must be in [0, --world-size 2)");
  expect_cli_error(args + " --nproc 3 --rank 0 --world-size 2",
                   "--nproc 3 disagrees with --world-size 2");
  // 6 rows cannot feed 7 workers: refused before anything is written.
  const auto out7 = cli_tmp("seven");
  auto r = run_seqlab(kRun + "--steps 3 --nproc 7 --out " + out7);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--batch 6 is smaller than the 7 data-parallel workers"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out7));
  // The launcher picks the workers' rendezvous itself; a port given with --nproc is used.
  const auto port_out = cli_tmp("port");
  r = run_seqlab(kRun + "--steps 2 --nproc 2 --master-port " + std::to_string(free_local_port()) +
                 " --out " + port_out);
  EXPECT_EQ(r.code, 0) << r.err;
  expect_cli_error(kRun + "--steps 2 --nproc 2 --master-addr 10.1.2.3 --out " + cli_tmp("remote"),
                   "--master-addr 10.1.2.3 is not local");
}
