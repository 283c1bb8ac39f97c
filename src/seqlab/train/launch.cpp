#include "seqlab/train/launch.h"

#include "seqlab/core/error.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

namespace seqlab {

namespace {

// The workers' pids, for the signal handler (async-signal-safe: a fixed array, kill()).
constexpr int kMaxWorkers = 256;
std::atomic<pid_t> g_workers[kMaxWorkers];
std::atomic<int> g_n_workers{0};

void forward_signal(int sig) {
  const int saved = errno;  // the interrupted waitpid's caller reads errno
  for (int i = 0; i < g_n_workers.load(); ++i) {
    const pid_t p = g_workers[i].load();
    if (p > 0) ::kill(p, sig);
  }
  errno = saved;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return "stopped";
}

bool lost_peer(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == kLostPeerExitCode;
}

}  // namespace

std::vector<std::string> worker_args(const std::vector<std::string>& args, int nproc,
                                     bool threads_given, int cores) {
  std::vector<std::string> out;
  const size_t n = args.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const char* f : {"--master-addr", "--master-port", "--rank", "--world-size"}) {
      if (a == f && i + 1 < n) {
        ++i;  // its value
        dropped = true;
      } else if (a.rfind(std::string(f) + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) out.push_back(a);
  }
  if (!threads_given) {
    out.push_back("--threads");
    out.push_back(std::to_string(std::max(1, cores / std::max(1, nproc))));
  }
  return out;
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  SEQLAB_CHECK(!ec, "cannot find the running executable (/proc/self/exe): {}", ec.message());
  return p.string();
}

std::vector<std::string> self_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  SEQLAB_CHECK(in.is_open(), "cannot read this process's command line (/proc/self/cmdline)");
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (!args.empty()) args.erase(args.begin());  // argv[0]
  return args;
}

void ensure_passive_omp_wait() {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  const std::string exe = self_executable();
  std::vector<std::string> args = self_command_line();
  args.insert(args.begin(), exe);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(exe.c_str(), argv.data());  // returns only on failure: go on with spinning threads
}

LaunchResult launch_local_workers(const std::string& exe, const std::vector<std::string>& args,
                                  int nproc, int port, double grace_seconds) {
  SEQLAB_CHECK(nproc >= 1 && nproc <= kMaxWorkers, "--nproc must be in [1, {}], got {}",
               kMaxWorkers, nproc);
  // Everything the children need is built before fork: after it they only call
  // async-signal-safe functions. Their environment is ours plus LOCAL_WORLD_SIZE (the memory
  // check counts the workers sharing this machine).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LOCAL_WORLD_SIZE=", 17) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc));
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::vector<std::string>> argvs(nproc);
  for (int r = 0; r < nproc; ++r) {
    auto& a = argvs[r];
    a.push_back(exe);
    a.insert(a.end(), args.begin(), args.end());
    for (const auto& s :
         {std::string("--rank"), std::to_string(r), std::string("--world-size"),
          std::to_string(nproc), std::string("--master-addr"), std::string("127.0.0.1"),
          std::string("--master-port"), std::to_string(port)})
      a.push_back(s);
    if (r > 0) a.push_back("--quiet");
  }

  std::vector<pid_t> pids(nproc, -1);
  g_n_workers = 0;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {};
  struct sigaction old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const pid_t launcher = ::getpid();
  for (int r = 0; r < nproc; ++r) {
    std::vector<char*> argv;
    for (auto& s : argvs[r]) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);         // a killed launcher takes its workers with it
      if (::getppid() != launcher) ::_exit(127);  // it died before the prctl
      ::execve(exe.c_str(), argv.data(), envp.data());
      const char msg[] = "error: cannot start a data-parallel worker (exec failed)\n";
      [[maybe_unused]] auto w = ::write(2, msg, sizeof(msg) - 1);
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
  int running = nproc, cause_status = 0;
  std::chrono::steady_clock::time_point failed_at;
  bool killed = false, any_failed = false;
  double grace = grace_seconds;
  // The reported cause: the first failure that is not a lost peer (a signal, an error of its
  // own); a worker that only lost its peer (exit code 3) is reported when nothing else failed.
  auto consider = [&](int r, int status) {
    if (res.failed_rank < 0 || (lost_peer(cause_status) && !lost_peer(status))) {
      res.failed_rank = r;
      res.failure = describe(status);
      res.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      cause_status = status;
    }
  };
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nproc; ++r) {
        if (pids[r] != pid) continue;
        pids[r] = -1;
        g_workers[r] = -1;
        --running;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        consider(r, status);
        if (!any_failed) failed_at = std::chrono::steady_clock::now();
        any_failed = true;
        // Without rank 0 (it serves the rendezvous) nobody can go on: stop the rest soon.
        if (r == 0) grace = std::min(grace, 5.0);
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) {
      // The workers cannot be waited for any more: stop them rather than lose track of them.
      const std::string why = std::strerror(errno);
      for (int r = 0; r < nproc; ++r)
        if (pids[r] > 0) ::kill(pids[r], SIGKILL);
      if (res.failed_rank < 0) {
        res.failed_rank = 0;
        res.failure = "could not be waited for (" + why + ")";
        res.code = 1;
      }
      break;
    }
    if (any_failed && !killed &&
        std::chrono::steady_clock::now() - failed_at > std::chrono::duration<double>(grace)) {
      // The others should have lost their peer by now; whatever still runs is stuck.
      for (int r = 0; r < nproc; ++r)
        if (pids[r] > 0) ::kill(pids[r], SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (any_failed)
    res.seconds_to_stop =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - failed_at).count();
  g_n_workers = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return res;
}

}  // namespace seqlab
