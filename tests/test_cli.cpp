// End-to-end tests of the seqlab binary: what a user types, the exit codes and messages they get.
#include "cli_testing.h"
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
#include <random>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

using Run = seqlab::testing::CliRun;
using seqlab::testing::seqlab_bin;
using seqlab::testing::slurp_file;

Run run_cli(const std::string& args) {
  return seqlab::testing::run_seqlab(args);
}
std::string tmp_dir(const std::string& name) {
  return seqlab::testing::cli_tmp(name);
}
void expect_error(const std::string& args, const std::string& needle) {
  seqlab::testing::expect_cli_error(args, needle);
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
  expect_error("train --out " + out + " --seed -1", "seed");
  expect_error("train --out " + out + " --threads -4", "threads");
  expect_error("train --out " + out + " --lr 1e30", "--lr");
  expect_error("train --out " + out + " --arch softmax --max-len 100 --max-context 64",
               "--max-context 64");
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

int64_t checkpoint_step(const std::string& dir) {
  auto t = seqlab::load_safetensors((fs::path(dir) / "train_state.safetensors").string()).tensors;
  return t.at("step").item<int64_t>();
}

// Starts `seqlab <args>` in the background; returns its pid.
pid_t start_cli(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    std::vector<char*> argv;
    std::string b = seqlab_bin();
    argv.push_back(b.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(b.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string w;
  while (ss >> w) out.push_back(w);
  return out;
}

// Killed with SIGKILL at a random moment after its first checkpoint (possibly mid-write), then
// resumed: the weights and the metrics log equal an uninterrupted run's, bit for bit.
TEST(Cli, KilledRunResumesBitwiseExactly) {
  const std::string args =
      "train --task parity --arch gru --steps 200 --checkpoint-every 10 "
      "--log-every 3 --max-len 10" +
      kTiny;
  const auto full = tmp_dir("full"), part = tmp_dir("part");
  ASSERT_EQ(run_cli(args + "--out " + full).code, 0);
  std::mt19937 rng(std::random_device{}());
  const pid_t pid = start_cli(split(args + "--out " + part));
  const auto state = fs::path(part) / "train_state.safetensors";
  for (int i = 0; i < 4000 && !fs::exists(state); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const int64_t at = checkpoint_step(part);
  ASSERT_LT(at, 200) << "the run finished before the kill: nothing was interrupted";
  auto r = run_cli("train --resume --out " + part + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  auto a = seqlab::load_safetensors((fs::path(full) / "model.safetensors").string()).tensors;
  auto b = seqlab::load_safetensors((fs::path(part) / "model.safetensors").string()).tensors;
  ASSERT_EQ(a.size(), b.size());
  for (auto& [k, v] : a) EXPECT_TRUE(v.equal(b.at(k))) << k << " (killed at step " << at << ")";
  EXPECT_EQ(slurp_file((fs::path(full) / "metrics.jsonl").string()),
            slurp_file((fs::path(part) / "metrics.jsonl").string()));
}

// Killed before its first checkpoint: the directory already loads (initial weights and configs),
// and --resume starts the run again.
TEST(Cli, KilledBeforeTheFirstCheckpointLoadsAndResumes) {
  const std::string args = "train --task parity --arch gru --steps 20 --max-len 10" + kTiny;
  const auto full = tmp_dir("full0"), part = tmp_dir("part0");
  ASSERT_EQ(run_cli(args + "--out " + full).code, 0);
  ASSERT_EQ(run_cli(args + "--out " + part).code, 0);
  fs::remove(fs::path(part) / "train_state.safetensors");  // as if killed before step 20
  EXPECT_EQ(run_cli("eval --model " + part + " -q --threads 1").code, 0);
  auto r = run_cli("train --resume --out " + part + " -q");
  ASSERT_EQ(r.code, 0) << r.err;
  auto a = seqlab::load_safetensors((fs::path(full) / "model.safetensors").string()).tensors;
  auto b = seqlab::load_safetensors((fs::path(part) / "model.safetensors").string()).tensors;
  for (auto& [k, v] : a) EXPECT_TRUE(v.equal(b.at(k))) << k;
}

TEST(Cli, RefusesToOverwriteWithoutResume) {
  const auto dir = tmp_dir("twice");
  const std::string args = "train --task parity --arch elman --steps 3" + kTiny + "--out " + dir;
  ASSERT_EQ(run_cli(args).code, 0);
  expect_error(args, "--resume");
}
