// `seqlab train --nproc N`: starts N local data-parallel workers (this executable again, each with
// --rank r --world-size N --master-addr 127.0.0.1 --master-port P) and supervises them.
//
// When a worker fails (an error exit or a signal), the others lose their peer at their next
// collective and exit with an error of their own (code 3); any still running after
// `grace_seconds` (5 s when rank 0, the rendezvous server, is gone) are killed, so a broken run
// never hangs. SIGINT/SIGTERM to the launcher are passed to the workers. Workers get
// LOCAL_WORLD_SIZE=N in their environment.
#pragma once

#include <string>
#include <vector>

namespace seqlab {

// The exit code of a worker whose collective failed because another worker was lost or stuck
// (CollectiveError): a consequence, so the launcher reports another failure as the cause.
constexpr int kLostPeerExitCode = 3;

struct LaunchResult {
  int code = 0;                // 0 when every worker succeeded, else the cause's exit code
  int failed_rank = -1;        // the worker whose failure is the cause (-1: none; see above)
  std::string failure;         // what happened to it ("exited with code 2", "killed by signal 9")
  double seconds_to_stop = 0;  // from the first failure until every worker had exited
};

// Runs `exe args... --rank r --world-size n --master-addr 127.0.0.1 --master-port port` for
// r = 0..n-1 and waits for all of them; ranks other than 0 also get --quiet.
LaunchResult launch_local_workers(const std::string& exe, const std::vector<std::string>& args,
                                  int nproc, int port, double grace_seconds);

// The arguments each worker of `seqlab train --nproc N` runs with, before launch_local_workers
// appends its rank and rendezvous: the launcher's own arguments (argv[1..]) without any
// --rank, --world-size, --master-addr or --master-port (as "--flag value" or "--flag=value"; the
// launcher chooses those), then, unless the command line set --threads (threads_given), an equal
// share of the cores: --threads max(1, cores / nproc).
std::vector<std::string> worker_args(const std::vector<std::string>& args, int nproc,
                                     bool threads_given, int cores);

// The path of the running executable (/proc/self/exe).
std::string self_executable();

// The arguments this process was started with, argv[1..] (/proc/self/cmdline): what a command
// that launches --nproc workers passes on to them (worker_args).
std::vector<std::string> self_command_line();

// Makes LibTorch's OpenMP threads sleep, not spin, between parallel regions: re-executes this
// process with OMP_WAIT_POLICY=PASSIVE when that variable is unset (libgomp reads it once, at
// load, so it cannot be set from inside), and returns when it is set or the exec failed. The
// matrix products run on OpenBLAS's own threads, during which the idle OpenMP workers otherwise
// spin on the same cores: a GPT-2-small attention-transfer step on 2 cores spent 56% of its
// cycles in libgomp and took 87 s for 3 steps, 49 s with PASSIVE (docs/results/scale). Results
// are unchanged (only waiting differs).
void ensure_passive_omp_wait();

}  // namespace seqlab
