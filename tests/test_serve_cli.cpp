// `seqlab serve` as a user runs it: bad flags are one-line errors (exit 2); SIGTERM while a request
// is in flight lets it finish, then the process exits 0.
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/serve/http_lib.h"
#include "seqlab/tasks/task.h"

#include "cli_testing.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <future>
#include <thread>

using namespace seqlab;
using namespace seqlab::testing;

extern char** environ;

namespace {

std::string gru_model() {
  const auto dir = cli_tmp("serve_model");
  ModelConfig c;
  c.mixer.arch = "gru";
  c.mixer.d_model = 16;
  c.n_layer = 1;
  c.vocab_size = 257;
  c.validate();
  torch::manual_seed(2);
  SeqModelImpl m(c);
  TaskConfig t;
  t.task = "lm";
  t.tokenizer = "byte";
  save_model_dir(dir, m, {{"task", t.to_json()}});
  return dir;
}

}  // namespace

TEST(ServeCli, BadFlagsAreOneLineErrors) {
  const auto dir = gru_model();
  expect_cli_error("serve --model " + dir + " --port 70000", "--port");
  expect_cli_error("serve --model " + dir + " --max-batch 0", "--max-batch");
  expect_cli_error("serve --model /nonexistent/model", "--model");
  // --cache-bytes takes a unit (256M = 256 MiB): the flags parse, and the model is what fails.
  expect_cli_error("serve --model /nonexistent/model --cache-bytes 256M", "--model");
  expect_cli_error("serve --model " + dir + " --cache-bytes 12Q", "--cache-bytes");
  expect_cli_error("serve --model " + dir + " --host 256.1.1.1 --port 0", "256.1.1.1");
  auto help = run_seqlab("serve --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--cache-bytes"), std::string::npos);
}

TEST(ServeCli, SigtermDrainsTheRequestsInFlightAndExitsZero) {
  const auto dir = gru_model();
  const auto log = cli_tmp("serve.log");
  const std::string bin = seqlab_bin();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> args = {
      bin,      "serve", "--model", dir, "--port", "0", "--threads", "1", "--max-output-tokens",
      "1000000"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int port = 0;
  for (int i = 0; i < 300 && port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto text = slurp_file(log);
    const auto at = text.find("127.0.0.1:");
    if (at != std::string::npos) port = std::atoi(text.c_str() + at + 10);
  }
  ASSERT_GT(port, 0) << slurp_file(log);
  auto pending = std::async(std::launch::async, [port] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    nlohmann::json b = {{"prompt", "drain"}, {"max_tokens", 40000}, {"ignore_eos", true}};
    auto r = c.Post("/v1/completions", b.dump(), "application/json");
    return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
  });
  // Wait until the request is in the batch.
  httplib::Client probe("127.0.0.1", port);
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    auto m = probe.Get("/metrics");
    running = m && m->body.find("\nseqlab_requests_active 1\n") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(running);
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << slurp_file(log);
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp_file(log);
  const auto [code, body] = pending.get();
  EXPECT_EQ(code, 200) << body;
  EXPECT_EQ(nlohmann::json::parse(body)["usage"]["completion_tokens"], 40000);
  EXPECT_NE(slurp_file(log).find("draining"), std::string::npos);
}
