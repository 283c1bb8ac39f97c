// `seqlab train --nproc N`: starts N local data-parallel workers (this executable again, each with
// --rank r --world-size N --master-addr 127.0.0.1 --master-port P) and supervises them.
//
// When a worker fails (an error exit or a signal), the others lose their peer at their next
// collective and exit with an error of their own; any still running after `grace_seconds` are
// killed, so a broken run never hangs. SIGINT/SIGTERM to the launcher are passed to the workers.
#pragma once

#include <string>
#include <vector>

namespace seqlab {

struct LaunchResult {
  int code = 0;                // 0 when every worker succeeded, else the first failure's exit code
  int failed_rank = -1;        // the first worker that failed (-1: none)
  std::string failure;         // what happened to it ("exited with code 2", "killed by signal 9")
  double seconds_to_stop = 0;  // from the first failure until every worker had exited
};

// Runs `exe args... --rank r --world-size n --master-addr 127.0.0.1 --master-port port` for
// r = 0..n-1 and waits for all of them; ranks other than 0 also get --quiet.
LaunchResult launch_local_workers(const std::string& exe, const std::vector<std::string>& args,
                                  int nproc, int port, double grace_seconds);

// The path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace seqlab
