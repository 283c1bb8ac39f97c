#include "seqlab/train/launch.h"

#include "seqlab/core/error.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

namespace seqlab {

namespace {

// The workers' pids, for the signal handler (async-signal-safe: a fixed array, kill()).
constexpr int kMaxWorkers = 256;
std::atomic<pid_t> g_workers[kMaxWorkers];
std::atomic<int> g_n_workers{0};

void forward_signal(int sig) {
  for (int i = 0; i < g_n_workers.load(); ++i) {
    const pid_t p = g_workers[i].load();
    if (p > 0) ::kill(p, sig);
  }
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return "stopped";
}

}  // namespace

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  SEQLAB_CHECK(!ec, "cannot find the running executable (/proc/self/exe): {}", ec.message());
  return p.string();
}

LaunchResult launch_local_workers(const std::string& exe, const std::vector<std::string>& args,
                                  int nproc, int port, double grace_seconds) {
  SEQLAB_CHECK(nproc >= 1 && nproc <= kMaxWorkers, "--nproc must be in [1, {}], got {}",
               kMaxWorkers, nproc);
  std::vector<pid_t> pids(nproc, -1);
  g_n_workers = 0;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  for (int r = 0; r < nproc; ++r) {
    std::vector<std::string> a = {exe};
    a.insert(a.end(), args.begin(), args.end());
    for (const auto& s :
         {std::string("--rank"), std::to_string(r), std::string("--world-size"),
          std::to_string(nproc), std::string("--master-addr"), std::string("127.0.0.1"),
          std::string("--master-port"), std::to_string(port)})
      a.push_back(s);
    if (r > 0) a.push_back("--quiet");
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed launcher takes its workers with it
      ::execv(exe.c_str(), argv.data());
      std::fprintf(stderr, "error: cannot start worker %d (%s): %s\n", r, exe.c_str(),
                   std::strerror(errno));
      ::_exit(127);
    }
    if (pid < 0) {
      forward_signal(SIGKILL);
      fail("cannot start data-parallel worker {}: fork failed: {}", r, std::strerror(errno));
    }
    pids[r] = pid;
    g_workers[r] = pid;
    g_n_workers = r + 1;
  }

  LaunchResult res;
  int running = nproc;
  std::chrono::steady_clock::time_point failed_at;
  bool killed = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nproc; ++r) {
        if (pids[r] != pid) continue;
        pids[r] = -1;
        g_workers[r] = -1;
        --running;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && res.failed_rank < 0) {
          res.failed_rank = r;
          res.failure = describe(status);
          res.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          failed_at = std::chrono::steady_clock::now();
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (res.failed_rank >= 0 && !killed &&
        std::chrono::steady_clock::now() - failed_at >
            std::chrono::duration<double>(grace_seconds)) {
      // The others should have lost their peer by now; whatever still runs is stuck.
      for (int r = 0; r < nproc; ++r)
        if (pids[r] > 0) ::kill(pids[r], SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (res.failed_rank >= 0)
    res.seconds_to_stop =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - failed_at).count();
  g_n_workers = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return res;
}

}  // namespace seqlab
