// End-to-end tests of the seqlab binary: what a user types, the exit codes and messages they get.
#include "cli_testing.h"
#include <gtest/gtest.h>

#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>

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
  expect_error("train --task pointer_chase --depth 5 --out " + out, "--depth (hops)");
  expect_error("train --task pointer_chase --min-len 5 --max-len 9 --out " + out,
               "below its minimum (9)");
  expect_error("frobnicate", "frobnicate");
  EXPECT_FALSE(fs::exists(out)) << "a failed command left output behind";
}

// A yes/no option is a flag that may take a value: bare (then followed by another option) it
// reads true, with `false` or `=false` it reads false.
TEST(Cli, BooleanOptionsAreFlagsThatMayTakeAValue) {
  const std::string mqar =
      "train --task mqar --vocab 16 --n-pairs 2 --max-len 8 --arch softmax "
      "--steps 2" +
      kTiny;
  const auto bare = tmp_dir("bool_bare"), off = tmp_dir("bool_off"), eq = tmp_dir("bool_eq");
  auto r = run_cli(mqar + "--tie-tag-head --out " + bare);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seqlab::read_config_json(bare)["model"]["tie_tag_head"], true);
  r = run_cli(mqar + "--tie-tag-head false --out " + off);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seqlab::read_config_json(off)["model"]["tie_tag_head"], false);
  r = run_cli(mqar + "--tie-tag-head=false --out " + eq);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(seqlab::read_config_json(eq)["model"]["tie_tag_head"], false);
  expect_error(mqar + "--tie-tag-head maybe --out " + tmp_dir("bool_bad"), "tie-tag-head");
  expect_error("train --task copy --steps 2 --tie-tag-head" + kTiny + "--out " + tmp_dir("bool_lm"),
               "copy's head is lm");
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
  // Parity's labels are balanced: guessing without the input scores about half.
  EXPECT_NEAR(ej["results"][0]["blind_accuracy"].get<double>(), 0.5, 0.1);
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

// Killed with SIGKILL at random moments, again and again: first after its first checkpoint, then
// at any moment of each resumed run (start-up, a step, a checkpoint half-written). After every
// kill the directory loads and its checkpoint never goes back; the last resume ends with weights
// and a metrics log equal to an uninterrupted run's, bit for bit.
TEST(Cli, KilledRunResumesBitwiseExactly) {
  const std::string args =
      "train --task parity --arch gru --steps 200 --checkpoint-every 10 "
      "--log-every 3 --max-len 10" +
      kTiny;
  const auto full = tmp_dir("full"), part = tmp_dir("part");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run_cli(args + "--out " + full).code, 0);
  // Kill moments are spread over a whole run's duration (start-up included).
  const auto run_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  const auto state = fs::path(part) / "train_state.safetensors";
  int64_t at = -1;
  for (int kill_no = 0; kill_no < 4; ++kill_no) {
    const pid_t pid =
        start_cli(split(kill_no == 0 ? args + "--out " + part : "train --resume -q --out " + part));
    if (kill_no == 0) {
      // Wait for the first checkpoint however slow the machine (a bound on the number of polls
      // made this flaky on a loaded 2-core machine); give up only if the run exits first.
      bool exited = false;
      const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(5);
      while (!fs::exists(state) && !exited && std::chrono::steady_clock::now() < limit) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        exited = waitpid(pid, nullptr, WNOHANG) == pid;
      }
      ASSERT_FALSE(exited) << "the run exited before its first checkpoint";
      if (!fs::exists(state)) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        FAIL() << "no checkpoint within 5 minutes";
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % (run_us + 1)));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    const std::string when =
        fmt::format("kill {} (seed {}, previous checkpoint at step {})", kill_no, seed, at);
    EXPECT_NO_THROW(seqlab::load_model_dir(part)) << when;
    const int64_t now = checkpoint_step(part);
    if (kill_no == 0) {
      ASSERT_LT(now, 200) << "the run finished before the kill: nothing was interrupted";
    }
    EXPECT_GE(now, at) << when;
    at = now;
  }
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

// --max-bad-steps: the run stops at that many non-finite losses in a row (each one's update
// skipped), with a one-line error, and the last checkpoint before them loads.
TEST(Cli, StopsAfterMaxBadStepsKeepingTheLastCheckpoint) {
  const auto dir = tmp_dir("nan");
  const std::string args =
      "train --task parity --arch gru --steps 40 --checkpoint-every 5 --max-len 10" + kTiny;
  setenv("SEQLAB_TEST_NAN_FROM_STEP", "12", 1);  // steps 12, 13, 14, ... (0-based) are NaN
  auto r = run_cli(args + "--max-bad-steps 3 --out " + dir);
  unsetenv("SEQLAB_TEST_NAN_FROM_STEP");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("non-finite loss at 3 steps in a row (last at step 14, --max-bad-steps 3)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(checkpoint_step(dir), 10);
  EXPECT_NO_THROW(seqlab::load_model_dir(dir));
  // The default allows 10 in a row; the field is saved with the run's config.
  const auto dir10 = tmp_dir("nan10");
  setenv("SEQLAB_TEST_NAN_FROM_STEP", "12", 1);
  r = run_cli(args + "--out " + dir10);
  unsetenv("SEQLAB_TEST_NAN_FROM_STEP");
  EXPECT_NE(r.err.find("at 10 steps in a row (last at step 21, --max-bad-steps 10)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(seqlab::read_config_json(dir10)["train"]["max_bad_steps"], 10);
  expect_error(args + "--max-bad-steps 0 --out " + tmp_dir("nan0"), "--max-bad-steps must be >= 1");
}

// An --out that cannot be created is one clear line naming it; a write that fails mid-run (a full
// disk, simulated with RLIMIT_FSIZE, which binds root too) stops the run with the previous
// checkpoint byte for byte intact and no temporary file left, and a later --resume finishes.
TEST(Cli, UnwritableOutIsAClearErrorAndKeepsTheLastCheckpoint) {
  const std::string args =
      "train --task parity --arch gru --checkpoint-every 10 --max-len 10" + kTiny;
  expect_error(args + "--out /dev/null/x", "cannot create directory /dev/null/x");
  const auto file = tmp_dir("a_file");
  std::ofstream(file) << "not a directory";
  expect_error(args + "--out " + file + "/run", file);

  const auto dir = tmp_dir("disk_full");
  ASSERT_EQ(run_cli(args + "--steps 20 --out " + dir).code, 0);
  const auto model = (fs::path(dir) / "model.safetensors").string();
  const auto state = (fs::path(dir) / "train_state.safetensors").string();
  const std::string state_before = slurp_file(state);
  // A file-size limit that model.safetensors and metrics.jsonl fit under but the checkpoint
  // (weights + AdamW moments) does not. dash's ulimit -f counts 512-byte blocks.
  const auto limit_blocks = fs::file_size(model) / 512 + 2;
  ASSERT_GT(state_before.size(), limit_blocks * 512);
  const auto err = (fs::path(tmp_dir("disk_full_err"))).string();
  const int status = std::system(
      fmt::format("trap '' XFSZ; ulimit -f {}; exec {} train --resume --steps 40 -q --out {} 2>{}",
                  limit_blocks, seqlab_bin(), dir, err)
          .c_str());
  const std::string msg = slurp_file(err);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << msg;
  EXPECT_EQ(msg.rfind("error: cannot write " + state, 0), 0u) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << msg;
  EXPECT_EQ(slurp_file(state), state_before);
  EXPECT_EQ(checkpoint_step(dir), 20);
  EXPECT_NO_THROW(seqlab::load_model_dir(dir));
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().filename().string().find(".tmp-"), std::string::npos) << f.path();
  auto r = run_cli("train --resume --steps 40 -q --out " + dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(checkpoint_step(dir), 40);
}

TEST(Cli, RefusesToOverwriteWithoutResume) {
  const auto dir = tmp_dir("twice");
  const std::string args = "train --task parity --arch elman --steps 3" + kTiny + "--out " + dir;
  ASSERT_EQ(run_cli(args).code, 0);
  expect_error(args, "--resume");
}
