// The data-parallel flags and the --nproc launcher of a command, as `seqlab train` has them
// (src/seqlab/train/distributed.h, launch.h): --nproc N starts N local workers of the same command
// line; --rank/--world-size/--master-addr/--master-port (or torchrun's RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, LOCAL_WORLD_SIZE) make this process one worker. Used by convert and
// finetune (cmd_convert.cpp).
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/launch.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace seqlab::cli {

struct DistArgs {
  DistConfig dist;
  int64_t nproc = 1;
  CLI::App* sub = nullptr;

  // A worker started by a launcher (or by hand with --rank): runs the command itself.
  bool launcher() const { return nproc > 1 && sub->count("--rank") == 0; }

  void add(CLI::App* app, const char* what) {
    sub = app;
    const char* group = "Data parallel (c10d / Gloo)";
    app->add_option("--nproc", nproc,
                    fmt::format("start N local data-parallel workers (each gets 1/N of the rows "
                                "of every {} batch and, without --threads, cores/N threads)",
                                what))
        ->capture_default_str()
        ->check(CLI::Range(1, 256))
        ->group(group);
    app->add_option("--rank", dist.rank, "this worker's rank (default: $RANK, else 0)")
        ->group(group);
    app->add_option("--world-size", dist.world_size,
                    "number of workers in all (default: $WORLD_SIZE, else 1)")
        ->group(group);
    app->add_option("--master-addr", dist.master_addr,
                    "rank 0's address (default: $MASTER_ADDR, else 127.0.0.1)")
        ->group(group);
    app->add_option("--master-port", dist.master_port,
                    "rank 0's rendezvous port (default: $MASTER_PORT, else 29500; --nproc picks a "
                    "free one)")
        ->group(group);
    app->add_option("--dist-timeout", dist.timeout,
                    "seconds to wait for workers to join, and for any one collective")
        ->capture_default_str()
        ->group(group);
  }

  // The launcher: starts and supervises the workers, which get their rank, world size and
  // rendezvous from it (any given on the command line are left out; a given port is used).
  int launch() const {
    SEQLAB_CHECK(dist.master_addr.empty() || dist.master_addr == "127.0.0.1" ||
                     dist.master_addr == "localhost",
                 "--nproc starts workers on this machine; --master-addr {} is not local (start "
                 "one process per worker with --rank/--world-size instead)",
                 dist.master_addr);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto args = worker_args(self_command_line(), static_cast<int>(nproc),
                                  sub->count("--threads") > 0, cores);
    const int port =
        sub->count("--master-port") ? static_cast<int>(dist.master_port) : free_local_port();
    auto lr =
        launch_local_workers(self_executable(), args, static_cast<int>(nproc), port, dist.timeout);
    SEQLAB_CHECK(lr.code == 0,
                 "data-parallel worker rank {} {}; the other workers stopped {:.1f} s later",
                 lr.failed_rank, lr.failure, lr.seconds_to_stop);
    return 0;
  }

  // This process's group (null when it runs alone): resolved from the flags and the environment.
  std::unique_ptr<DataParallel> join() const {
    const DistConfig d = dist.resolved();
    SEQLAB_CHECK(nproc == 1 || nproc == d.world_size, "--nproc {} disagrees with --world-size {}",
                 nproc, d.world_size);
    if (!d.distributed()) return nullptr;
    return std::make_unique<DataParallel>(d);
  }
};

}  // namespace seqlab::cli
