// seqlab train: train a model on a task and write its model directory (src/seqlab/train/trainer.h),
// in one process, as one worker of a data-parallel run (--rank/--world-size), or as the launcher of
// --nproc local workers (src/seqlab/train/launch.h).
#include "cli_fields.h"
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/own_memory.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/launch.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <thread>

namespace seqlab::cli {

namespace {

struct TrainArgs {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  std::string out;
  bool resume = false, json = false;
  Common common;
  // Data parallel (train/distributed.h): c10d TCPStore rendezvous + ProcessGroupGloo.
  DistConfig dist;
  int64_t nproc = 1;
  std::vector<std::string> command_line;  // argv[1..], what --nproc passes on to the workers
  CLI::App* sub = nullptr;
};

// The launcher: this process only starts and supervises the workers, which get their rank,
// world size and rendezvous from it (any given on the command line are left out; a given port is
// used).
int launch_workers(const TrainArgs& a) {
  SEQLAB_CHECK(a.dist.master_addr.empty() || a.dist.master_addr == "127.0.0.1" ||
                   a.dist.master_addr == "localhost",
               "--nproc starts workers on this machine; --master-addr {} is not local (start "
               "one process per worker with --rank/--world-size instead)",
               a.dist.master_addr);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto args =
      worker_args(a.command_line, static_cast<int>(a.nproc), a.sub->count("--threads") > 0, cores);
  const int port =
      a.sub->count("--master-port") ? static_cast<int>(a.dist.master_port) : free_local_port();
  auto lr = launch_local_workers(self_executable(), args, static_cast<int>(a.nproc), port,
                                 a.dist.timeout);
  SEQLAB_CHECK(lr.code == 0,
               "data-parallel worker rank {} {}; the other workers stopped {:.1f} s later",
               lr.failed_rank, lr.failure, lr.seconds_to_stop);
  return 0;
}

int run_train(const TrainArgs& a) {
  const bool worker = a.sub->count("--rank") > 0;  // a launched (or hand-started) worker
  if (a.nproc > 1 && !worker) return launch_workers(a);
  a.common.apply();
  const int64_t steps_override = a.sub->count("--steps") ? a.train.steps : 0;
  const DistConfig d = a.dist.resolved();
  SEQLAB_CHECK(a.nproc == 1 || a.nproc == d.world_size, "--nproc {} disagrees with --world-size {}",
               a.nproc, d.world_size);
  std::unique_ptr<DataParallel> dp;
  if (d.distributed()) dp = std::make_unique<DataParallel>(d);
  auto r = train_model(a.model, a.task, a.train, a.out, a.resume, steps_override, 0, {}, dp.get());
  if (dp && !dp->root()) return 0;  // rank 0 reports the run
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out},
                                {"start_step", r.start_step},
                                {"steps", r.steps},
                                {"first_loss", r.first_loss},
                                {"last_loss", r.last_loss},
                                {"eval_accuracy", r.eval_accuracy},
                                {"eval_loss", r.eval_loss},
                                {"eval_ppl", r.eval_ppl},
                                {"seconds", r.seconds},
                                {"peak_rss_mb", own_peak_rss_kb() / 1024.0}}
                     .dump()
              << "\n";
  } else {
    fmt::print("trained {} steps in {:.1f}s: loss {:.4f} -> {:.4f}, eval accuracy {:.4f}\n{}\n",
               r.steps - r.start_step, r.seconds, r.first_loss, r.last_loss, r.eval_accuracy,
               a.out);
  }
  return 0;
}

void add_dist_flags(CLI::App* train, TrainArgs& a) {
  const char* dp_group = "Data parallel (c10d / Gloo)";
  train
      ->add_option("--nproc", a.nproc,
                   "start N local data-parallel workers (each gets --batch/N rows of every "
                   "batch and, without --threads, cores/N threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256))
      ->group(dp_group);
  train->add_option("--rank", a.dist.rank, "this worker's rank (default: $RANK, else 0)")
      ->group(dp_group);
  train
      ->add_option("--world-size", a.dist.world_size,
                   "number of workers in all (default: $WORLD_SIZE, else 1)")
      ->group(dp_group);
  train
      ->add_option("--master-addr", a.dist.master_addr,
                   "rank 0's address (default: $MASTER_ADDR, else 127.0.0.1)")
      ->group(dp_group);
  train
      ->add_option("--master-port", a.dist.master_port,
                   "rank 0's rendezvous port (default: $MASTER_PORT, else 29500; --nproc picks a "
                   "free one)")
      ->group(dp_group);
  train
      ->add_option("--dist-timeout", a.dist.timeout,
                   "seconds to wait for workers to join, and for any one collective")
      ->capture_default_str()
      ->group(dp_group);
}

}  // namespace

void add_train_commands(CLI::App& app, Actions& actions,
                        const std::vector<std::string>& command_line) {
  auto a = std::make_shared<TrainArgs>();
  a->command_line = command_line;
  auto* train = app.add_subcommand("train", "train a model on a task; writes a model directory");
  a->sub = train;
  a->task.visit(AddFlagsVisitor{train, "Task", {}});
  a->model.visit(AddFlagsVisitor{train, "Model", {"vocab-size", "head", "n-classes"}});
  a->train.visit(AddFlagsVisitor{train, "Training", {}});
  train->add_option("--out", a->out, "model directory to write")->required()->group("Output");
  train
      ->add_flag("--resume", a->resume,
                 "continue from the checkpoint in --out (saved configs are used; --steps may "
                 "extend the run)")
      ->group("Output");
  train->add_flag("--json", a->json, "print a JSON summary on stdout")->group("Output");
  a->common.add(train, /*with_threads=*/false);  // --threads is a TrainConfig field, saved with it
  add_dist_flags(train, *a);
  actions.push_back({train, [a] { return run_train(*a); }});
}

}  // namespace seqlab::cli
