// Runs seqlab the way its own parents do (a suite starting a worker, bench starting a
// measurement): posix_spawn, no shell. The child then starts with this test process's resident
// high-water mark as its ru_maxrss (core/own_memory.h), which is what the memory tests need to
// tell a process's own peak from an inherited one.
#pragma once

#include "cli_testing.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace seqlab::testing {

// `seqlab <args>` (split on spaces), stdout to a file; the exit code and stdout.
inline CliRun spawn_seqlab(const std::string& args) {
  std::vector<std::string> a = {seqlab_bin()};
  std::istringstream in(args);
  for (std::string w; in >> w;) a.push_back(w);
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  const auto out = (cli_scratch() / "spawn_stdout").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  CliRun r;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int status = 0;
  if (waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.out = slurp_file(out);
  return r;
}

// Touches and frees `mib` MiB, raising this process's resident high-water mark by that much.
inline void raise_own_peak(size_t mib) {
  const size_t n = mib << 20;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  std::memset(p, 1, n);
  munmap(p, n);
}

}  // namespace seqlab::testing
