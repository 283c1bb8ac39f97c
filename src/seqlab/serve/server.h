// `seqlab serve`: an OpenAI-compatible HTTP server over the continuous-batching scheduler
// (serve/scheduler.h), on cpp-httplib (one thread per connection from a fixed pool).
//
// Endpoints: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health,
// GET /metrics (Prometheus text). Every error is an HTTP 4xx/5xx with OpenAI's
// {"error": {"message", "type", "code"}}. docs/serve.md has the fields and the limits.
#pragma once

#include "seqlab/serve/scheduler.h"

#include <memory>
#include <string>

namespace seqlab::serve {

struct ServeConfig {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (bind() returns it)
  SchedulerConfig scheduler;
  std::string weights;  // --weights: f32 | bf16 | int8; "" = the format the directory stores
  int64_t max_prompt_tokens = 8192;
  int64_t max_output_tokens = 4096;           // the largest max_tokens a request may ask for
  int64_t max_body_bytes = int64_t{1} << 20;  // larger bodies get 413
  double timeout_s = 600;                     // per request, from arrival to its last token
  int64_t http_threads = 0;                   // 0: max_batch + max_queue + 4
};

class Server {
 public:
  // Loads the model directory (the fast decoder must support it) and starts the scheduler.
  Server(const std::string& model_dir, ServeConfig cfg);
  ~Server();
  // Binds the listening socket; returns the port (a seqlab::Error if it cannot bind).
  int bind();
  // Serves until shutdown(); returns when every connection has been answered.
  void run();
  // Stops accepting connections, lets the requests in flight finish for up to `grace_s` seconds,
  // cancels the rest. Safe to call from any thread, more than once.
  void shutdown(double grace_s = 30);
  const std::string& model_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seqlab::serve
