// seqlab serve: the OpenAI-compatible HTTP server (src/seqlab/serve/, docs/serve.md).
#include "commands.h"

#include "seqlab/infer/kernels.h"
#include "seqlab/serve/server.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

namespace seqlab::cli {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

struct ServeArgs {
  std::string model;
  serve::ServeConfig cfg;
  double grace_s = 30;
  int decoder_threads = 1;
  Common common;
};

const char* kServeHelp =
    "Serve a causal LM over HTTP with OpenAI's API: POST /v1/completions, POST "
    "/v1/chat/completions, GET /v1/models, GET /health, GET /metrics (Prometheus). Requests are "
    "decoded together by continuous batching on the fast decoder (one batched step per token for "
    "every active request); finished requests' states stay in a session cache (--cache-bytes, LRU) "
    "so a prompt that extends an earlier conversation prefills only its new tokens. SIGINT or "
    "SIGTERM stops accepting, lets the requests in flight finish (--grace), then exits 0. "
    "docs/serve.md has every field.";

int run_serve(ServeArgs& a) {
  a.common.apply();
  infer::set_threads(a.decoder_threads);
  // The stop signals set a flag (any thread may take them: OpenBLAS starts its own threads
  // before main, so blocking them in ours would not do); one thread watches it and shuts the
  // server down.
  struct sigaction act {};
  act.sa_handler = [](int sig) { g_stop_signal = sig; };
  sigemptyset(&act.sa_mask);
  sigaction(SIGINT, &act, nullptr);
  sigaction(SIGTERM, &act, nullptr);
  serve::Server server(a.model, a.cfg);
  const int port = server.bind();
  log_info("serve: {} on http://{}:{} (max batch {}, queue {}, cache {} bytes)", server.model_id(),
           a.cfg.host, port, a.cfg.scheduler.max_batch, a.cfg.scheduler.max_queue,
           a.cfg.scheduler.cache_bytes);
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (const int sig = g_stop_signal) {
        log_info("serve: signal {}: draining (up to {} s)", sig, a.grace_s);
        server.shutdown(a.grace_s);
        return;
      }
    }
  });
  server.run();
  done = true;
  waiter.join();
  server.shutdown(a.grace_s);
  log_info("serve: stopped");
  return 0;
}

}  // namespace

void add_serve_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<ServeArgs>();
  auto* sub = app.add_subcommand("serve", kServeHelp);
  auto& c = a->cfg;
  sub->add_option("--model", a->model, "model directory (its name is the model id)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--host", c.host, "address to listen on")->capture_default_str();
  sub->add_option("--port", c.port, "port (0 = any free port, printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--weights", c.weights,
                  "weight format of the decoder: f32, bf16 or int8 (blocks of 32 with a scale "
                  "each; converted at load). Default: the format the model directory stores");
  sub->add_option("--max-batch", c.scheduler.max_batch, "requests decoded together")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  sub->add_option("--max-queue", c.scheduler.max_queue,
                  "requests waiting beyond the batch; more get HTTP 429")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--cache-bytes", c.scheduler.cache_bytes,
                  "session cache budget in bytes, or with a unit: 256M, 2G (k, M, G are powers "
                  "of 1024; 0 = no cache); least recently used states go first")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false).description(""))
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-prompt-tokens", c.max_prompt_tokens, "longer prompts get HTTP 400")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-output-tokens", c.max_output_tokens,
                  "the largest max_tokens a request may ask for (more: HTTP 400)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-body-bytes", c.max_body_bytes, "larger request bodies get HTTP 413")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{64}, int64_t{1} << 34));
  sub->add_option("--timeout", c.timeout_s, "seconds a request may take (then HTTP 504)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--grace", a->grace_s,
                  "seconds requests in flight may take to finish after SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--decoder-threads", a->decoder_threads,
                  "threads of the decoder's matrix products (split by weight rows; keep it at most "
                  "the idle cores)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--http-threads", c.http_threads,
                  "connection threads (0 = max-batch + max-queue + 4)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  a->common.add(sub);
  actions.push_back({sub, [a] { return run_serve(*a); }});
}

}  // namespace seqlab::cli
