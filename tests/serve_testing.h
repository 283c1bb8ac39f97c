// Shared by the server's tests (test_serve.cpp, test_serve_disconnect.cpp): a tiny random model
// directory, a server on a free port on its own thread, and reading /metrics.
#pragma once

#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/serve/http_lib.h"
#include "seqlab/serve/server.h"
#include "seqlab/tasks/task.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace seqlab::testing {

using nlohmann::json;

inline constexpr int64_t kV = 257;  // the byte tokenizer's

// A random byte-level LM saved as a model directory (eval mode; weights from a fixed seed).
inline std::string make_model(const std::string& arch) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seqlab_serve_" + std::to_string(getpid()) + "_" + arch);
  if (std::filesystem::exists(dir / "config.json")) return dir.string();
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 32;
  c.mixer.n_head = 4;
  c.mixer.max_len = 128;
  c.n_layer = 2;
  c.vocab_size = kV;
  c.validate();
  torch::manual_seed(5);
  SeqModelImpl m(c);
  TaskConfig t;
  t.task = "lm";
  t.tokenizer = "byte";
  save_model_dir(dir.string(), m, {{"task", t.to_json()}});
  return dir.string();
}

// A server on a free port, run on its own thread.
struct Running {
  std::unique_ptr<serve::Server> server;
  std::thread thread;
  int port = 0;
  Running(const std::string& dir, serve::ServeConfig cfg) {
    cfg.port = 0;
    server = std::make_unique<serve::Server>(dir, cfg);
    port = server->bind();
    thread = std::thread([this] { server->run(); });
  }
  ~Running() {
    server->shutdown(0);
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    return c;
  }
  // POSTs a JSON body; returns (status, parsed body or the raw text as a string).
  std::pair<int, json> post(const std::string& path, const std::string& body) const {
    auto c = client();
    auto r = c.Post(path.c_str(), body, "application/json");
    if (!r) return {0, json()};
    json j = json::parse(r->body, nullptr, false);
    return {r->status, j.is_discarded() ? json(r->body) : j};
  }
};

inline json greedy(const json& prompt, int max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

// A metric's value from /metrics ("name value" line), or -1.
inline double metric(const Running& srv, const std::string& name) {
  auto r = srv.client().Get("/metrics");
  if (!r) return -1;
  const auto at = r->body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(r->body.substr(at + name.size() + 2));
}

}  // namespace seqlab::testing
