// End-to-end tests of the seqlab binary: what a user types, the exit codes and messages they get.
#include <gtest/gtest.h>

#include "seqlab/core/safetensors.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

namespace fs = std::filesystem;

namespace {

struct Run {
  int code = -1;
  std::string out, err;
};

std::string bin() {
  const char* b = std::getenv("SEQLAB_BIN");
  return b ? b : "./seqlab";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs `seqlab <args>` through the shell, capturing stdout, stderr and the exit code.
Run run_cli(const std::string& args) {
  const auto dir = fs::temp_directory_path();
  const auto o = (dir / "seqlab_cli_out").string(), e = (dir / "seqlab_cli_err").string();
  const int status = std::system((bin() + " " + args + " >" + o + " 2>" + e).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

std::string tmp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("seqlab_test_cli_" + name);
  fs::remove_all(d);
  return d.string();
}

// A bad-input case: exit code 2, one "error: ..." line containing `needle`, nothing on stdout,
// no LibTorch backtrace.
void expect_error(const std::string& args, const std::string& needle) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
  EXPECT_EQ(r.out, "") << args;
}

const std::string kTiny = " --d-model 16 --n-head 2 --n-layer 1 --batch 8 --threads 1 -q ";

}  // namespace

TEST(Cli, BadInputGivesExitCode2AndOneLine) {
  const auto out = tmp_dir("bad");
  expect_error("train --out " + out + " --no-such-flag 3", "no-such-flag");
  expect_error("train --out " + out + " --arch transformerxl", "unknown architecture");
  expect_error("train --out " + out + " --arch linear --feature-map cosformer",
               "unknown feature map");
  expect_error("train --out " + out + " --task nonesuch", "unknown task 'nonesuch'");
  expect_error("train --out " + out + " --d-model 30 --n-head 4", "divisible");
  expect_error("train --out " + out + " --steps abc", "steps");
  expect_error("train --out " + out + " --min-len 10 --max-len 5", "--max-len 5");
  expect_error("train --out " + out + " --arch lstm --causal false", "bidirectional");
  expect_error("eval --model " + tmp_dir("missing"), "not a directory");
  expect_error("frobnicate", "frobnicate");
  EXPECT_FALSE(fs::exists(out)) << "a failed command left output behind";
}

TEST(Cli, MalformedModelDirectoryIsAnError) {
  const auto dir = tmp_dir("malformed");
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "config.json") << "{\"format\": \"seqlab-model\", ";
  expect_error("eval --model " + dir, "not valid JSON");
  std::ofstream(fs::path(dir) / "config.json", std::ios::trunc)
      << R"({"format":"seqlab-model","format_version":1,"model":{"arch":"gru","vocab_size":2,"head":"tag","n_classes":2}})";
  std::ofstream(fs::path(dir) / "model.safetensors") << "short";
  expect_error("eval --model " + dir, "model.safetensors");
}

TEST(Cli, ListsArchsAndTasks) {
  auto a = run_cli("archs");
  EXPECT_EQ(a.code, 0);
  for (auto n : {"softmax", "linear", "elman", "gru", "lstm", "qrnn", "s4d", "mamba", "elu1",
                 "relu", "rfa", "performer", "t2r", "hedgehog"})
    EXPECT_NE(a.out.find(n), std::string::npos) << n;
  auto t = run_cli("tasks");
  EXPECT_NE(t.out.find("parity"), std::string::npos);
  EXPECT_EQ(run_cli("train --help").code, 0);
}

// The smoke test the foundation issue names: 200 steps of parity with an LSTM, the loss falls.
TEST(Cli, LstmLearnsParityAndEvalPrintsJson) {
  const auto dir = tmp_dir("lstm");
  auto r = run_cli("train --task parity --arch lstm --steps 200 --lr 0.01 --max-len 12 --json" +
                   kTiny + "--out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["last_loss"].get<double>(), 0.8 * j["first_loss"].get<double>()) << r.out;
  auto e = run_cli("eval --model " + dir + " --lengths 8,12 --json --threads 1");
  ASSERT_EQ(e.code, 0) << e.err;
  auto ej = nlohmann::json::parse(e.out);  // exactly one JSON document on stdout
  EXPECT_EQ(ej["task"], "parity");
  EXPECT_EQ(ej["arch"], "lstm");
  ASSERT_EQ(ej["results"].size(), 2u);
  EXPECT_EQ(ej["results"][0]["length"], 8);
  EXPECT_GT(ej["results"][0]["accuracy"].get<double>(), 0.5);
  EXPECT_GT(ej["results"][0]["n"].get<int64_t>(), 0);
}

// Killed with SIGKILL after its first checkpoint, at a random moment (possibly mid-write),
// then resumed: the weights equal an uninterrupted run's, bit for bit.
TEST(Cli, KilledRunResumesBitwiseExactly) {
  const std::string args =
      "train --task parity --arch gru --steps 60 --checkpoint-every 10 "
      "--max-len 10" +
      kTiny;
  const auto full = tmp_dir("full"), part = tmp_dir("part");
  ASSERT_EQ(run_cli(args + "--out " + full).code, 0);
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", (bin() + " " + args + "--out " + part + " 2>/dev/null").c_str(),
          nullptr);
    _exit(127);
  }
  const auto state = fs::path(part) / "train_state.safetensors";
  for (int i = 0; i < 2000 && !fs::exists(state); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(std::rand() % 100));
  kill(pid, SIGKILL);
  system("pkill -9 -f seqlab_test_cli_part >/dev/null 2>&1");
  waitpid(pid, nullptr, 0);
  auto r = run_cli("train --resume --out " + part + " --threads 1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  auto a = seqlab::load_safetensors((fs::path(full) / "model.safetensors").string()).tensors;
  auto b = seqlab::load_safetensors((fs::path(part) / "model.safetensors").string()).tensors;
  ASSERT_EQ(a.size(), b.size());
  for (auto& [k, v] : a) EXPECT_TRUE(v.equal(b.at(k))) << k;
}

TEST(Cli, RefusesToOverwriteWithoutResume) {
  const auto dir = tmp_dir("twice");
  const std::string args = "train --task parity --arch elman --steps 3" + kTiny + "--out " + dir;
  ASSERT_EQ(run_cli(args).code, 0);
  expect_error(args, "--resume");
}
