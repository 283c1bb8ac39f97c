// Running the seqlab binary from a test: what a user types, the exit code and the output.
// The binary is $SEQLAB_BIN (ctest sets it); each test process works in a scratch directory of
// its own, so concurrent ctest runs do not collide.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace seqlab::testing {

struct CliRun {
  int code = -1;
  std::string out, err;
};

inline std::string seqlab_bin() {
  const char* b = std::getenv("SEQLAB_BIN");
  return b ? b : "./seqlab";
}

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// This test process's scratch directory, created empty on first use.
inline std::filesystem::path cli_scratch() {
  static const std::filesystem::path d = [] {
    auto p = std::filesystem::temp_directory_path() / ("seqlab_cli." + std::to_string(getpid()));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

// A fresh (removed) path inside the scratch directory.
inline std::string cli_tmp(const std::string& name) {
  auto d = cli_scratch() / name;
  std::filesystem::remove_all(d);
  return d.string();
}

// Runs `seqlab <args>` through the shell with `input` on stdin, capturing stdout, stderr and the
// exit code.
inline CliRun run_seqlab(const std::string& args, const std::string& input = "") {
  const auto i = (cli_scratch() / "stdin").string(), o = (cli_scratch() / "stdout").string(),
             e = (cli_scratch() / "stderr").string();
  std::ofstream(i, std::ios::binary) << input;
  const int status =
      std::system((seqlab_bin() + " " + args + " <" + i + " >" + o + " 2>" + e).c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp_file(o);
  r.err = slurp_file(e);
  return r;
}

// A bad-input case: exit code 2, one "error: ..." line containing `needle`, nothing on stdout.
inline void expect_cli_error(const std::string& args, const std::string& needle,
                             const std::string& input = "") {
  auto r = run_seqlab(args, input);
  EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
  EXPECT_EQ(r.out, "") << args;
}

}  // namespace seqlab::testing
