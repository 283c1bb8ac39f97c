#include "seqlab/serve/server.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/serve/api.h"
#include "seqlab/serve/connection.h"
#include "seqlab/serve/http_lib.h"
#include "seqlab/serve/metrics.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>

#include <sys/socket.h>

namespace seqlab::serve {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string dump(const json& j) {
  // Token pieces may be partial UTF-8 characters: replace, never throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One choice in flight: its request and what has been rendered of it.
struct Choice {
  std::shared_ptr<Request> req;
  std::vector<TokenInfo> tokens;
  Request::Snapshot last;
};

}  // namespace

// cpp-httplib with access to its listening socket: Debian's build listens with a backlog of 5
// (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the library), so a burst of more connections than that
// overflows the SYN queue and the kernel retries them after 1 s (measured: p99 time to first token
// 1.03 s at 16 streams). listen() again on the bound socket raises the backlog.
struct HttpServer : httplib::Server {
  void raise_backlog() {
    const auto fd = svr_sock_.load();
    if (fd != INVALID_SOCKET) ::listen(fd, SOMAXCONN);
  }
};

struct Server::Impl {
  ServeConfig cfg;
  std::string id;
  std::unique_ptr<Tokenizer> tok;
  ChatTemplate chat_template;
  std::unique_ptr<Scheduler> sched;
  Limits lim;
  Metrics metrics;
  HttpServer http;
  std::atomic<int64_t> next_id{0};
  std::atomic<bool> stopping{false};
  std::mutex shutdown_mu;

  void reply(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json");
  }
  void reply_error(httplib::Response& res, const ApiError& e) {
    reply(res, e.status, error_body(e.status, e.type, e.code, e.what()));
  }
  std::string text_of(const std::vector<int64_t>& ids) const {
    if (!tok) return "";
    return tok->decode(ids);
  }
  std::string piece(int64_t id) const {
    return tok ? valid_utf8(tok->decode({id})) : std::to_string(id);
  }
  // The generated text, cut at the earliest stop string; `stopped` says whether one was found.
  std::string render(const std::vector<TokenInfo>& out, const std::vector<std::string>& stop,
                     bool* stopped) const {
    std::vector<int64_t> ids;
    for (const auto& t : out) ids.push_back(t.token);
    std::string text = text_of(ids);
    size_t cut = std::string::npos;
    for (const auto& s : stop) cut = std::min(cut, text.find(s));
    if (stopped) *stopped = cut != std::string::npos;
    if (cut != std::string::npos) text.resize(cut);
    return text;
  }

  std::vector<Choice> submit(const CompletionRequest& r);
  json logprobs_json(const CompletionRequest& r, const std::vector<int64_t>& prompt,
                     const Request::Snapshot& s, const std::vector<TokenInfo>& out) const;
  json usage(const std::vector<Choice>& cs) const;
  void await(std::vector<Choice>& cs, size_t i, const ClientConnection& conn, Clock::time_point t0,
             bool* first);
  void complete(const CompletionRequest& r, std::vector<Choice> cs, const ClientConnection& conn,
                httplib::Response& res, Clock::time_point t0);
  void stream(const CompletionRequest& r, std::vector<Choice> cs, const ClientConnection& conn,
              httplib::Response& res, Clock::time_point t0);
  void handle(const httplib::Request& req, httplib::Response& res, bool chat);
  void routes();
};

std::vector<Choice> Server::Impl::submit(const CompletionRequest& r) {
  if (!r.model.empty() && r.model != id)
    throw ApiError(
        404, "invalid_request_error", "model_not_found",
        fmt::format("the model '{}' does not exist (this server serves '{}')", r.model, id));
  std::vector<Choice> cs;
  for (const auto& p : r.prompts) {
    GenParams g = r.gen;
    g.eos = (r.ignore_eos || !tok) ? -1 : tok->eos_id();
    g.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(cfg.timeout_s));
    auto q = std::make_shared<Request>(p, g);
    if (!r.stop.empty())
      q->stop_check = [this, stop = r.stop](const std::vector<TokenInfo>& out) {
        bool stopped = false;
        render(out, stop, &stopped);
        return stopped;
      };
    const auto sub = sched->submit(q);
    if (sub != Scheduler::Submitted::ok) {
      for (auto& c : cs) c.req->cancel();
      if (sub == Scheduler::Submitted::queue_full)
        throw ApiError(429, "rate_limit_error", "queue_full",
                       "the server's queue is full; retry later");
      throw ApiError(503, "server_error", "shutting_down", "the server is shutting down");
    }
    cs.push_back(Choice{q, {}, {}});
  }
  return cs;
}

json Server::Impl::logprobs_json(const CompletionRequest& r, const std::vector<int64_t>& prompt,
                                 const Request::Snapshot& s,
                                 const std::vector<TokenInfo>& out) const {
  if (r.gen.logprobs < 0) return nullptr;
  auto top_of = [&](const TokenInfo& t) {
    json o = json::object();
    // Pieces that are parts of UTF-8 characters may share a key: the more probable one stays.
    for (const auto& [tid, lp] : t.top)
      if (!o.contains(piece(tid))) o[piece(tid)] = lp;
    return o;
  };
  if (r.chat) {
    json content = json::array();
    for (const auto& t : out) {
      json top = json::array();
      for (const auto& [tid, lp] : t.top) top.push_back({{"token", piece(tid)}, {"logprob", lp}});
      content.push_back({{"token", piece(t.token)}, {"logprob", t.logprob}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array(),
       ids = json::array();
  int64_t off = 0;
  auto add = [&](int64_t tid, json lp, json top) {
    ids.push_back(tid);
    tokens.push_back(piece(tid));
    lps.push_back(std::move(lp));
    tops.push_back(std::move(top));
    offs.push_back(off);
    off += static_cast<int64_t>(piece(tid).size());
  };
  if (r.echo) {
    add(prompt[0], nullptr, nullptr);
    for (size_t i = 1; i < prompt.size() && i - 1 < s.prompt_logprobs.size(); ++i)
      add(prompt[i], s.prompt_logprobs[i - 1].logprob, top_of(s.prompt_logprobs[i - 1]));
  }
  for (const auto& t : out) add(t.token, t.logprob, top_of(t));
  // token_ids (an extension): a piece that is part of a UTF-8 character does not show as text.
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offs},
          {"token_ids", ids}};
}

json Server::Impl::usage(const std::vector<Choice>& cs) const {
  int64_t p = 0, c = 0, cached = 0;
  for (const auto& ch : cs) {
    p += static_cast<int64_t>(ch.req->prompt.size());
    c += static_cast<int64_t>(ch.tokens.size());
    cached += ch.last.cached_tokens;
  }
  return {{"prompt_tokens", p},
          {"completion_tokens", c},
          {"total_tokens", p + c},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

namespace {

// A finished request that did not end normally is an HTTP error.
void check_finish(const Request::Snapshot& s) {
  if (s.finish_reason == "timeout")
    throw ApiError(504, "server_error", "timeout", "the request ran past the server's timeout");
  if (s.finish_reason == "cancelled")
    throw ApiError(503, "server_error", "cancelled",
                   s.error.empty() ? "the request was cancelled" : s.error);
  if (s.finish_reason == "error") throw ApiError(500, "server_error", "internal_error", s.error);
}

}  // namespace

// Waits for choice i to end. A client that leaves meanwhile cancels every choice (each leaves the
// batch, or the queue, in the scheduler's next iteration) and ends the handler with 499, nginx's
// "client closed request", which only the metrics see.
void Server::Impl::await(std::vector<Choice>& cs, size_t i, const ClientConnection& conn,
                         Clock::time_point t0, bool* first) {
  auto& c = cs[i];
  while (true) {
    auto s = c.req->wait(c.tokens.size(), Clock::now() + std::chrono::milliseconds(50));
    if (*first && !s.tokens.empty()) {
      metrics.first_token_seconds.observe(since(t0));
      *first = false;
    }
    c.tokens.insert(c.tokens.end(), s.tokens.begin(), s.tokens.end());
    if (s.done) {
      c.last = std::move(s);
      return;
    }
    if (conn.closed()) {
      for (auto& other : cs) other.req->cancel();
      throw ApiError(499, "invalid_request_error", "client_disconnected",
                     "the client closed the connection");
    }
  }
}

void Server::Impl::complete(const CompletionRequest& r, std::vector<Choice> cs,
                            const ClientConnection& conn, httplib::Response& res,
                            Clock::time_point t0) {
  json choices = json::array();
  bool first = true;
  for (size_t i = 0; i < cs.size(); ++i) {
    auto& c = cs[i];
    await(cs, i, conn, t0, &first);
    check_finish(c.last);
    bool stopped = false;
    std::string text = render(c.tokens, r.stop, &stopped);
    if (r.echo) text = text_of(c.req->prompt) + text;
    json choice = {{"index", i}, {"finish_reason", stopped ? "stop" : c.last.finish_reason}};
    choice["logprobs"] = logprobs_json(r, c.req->prompt, c.last, c.tokens);
    if (r.chat)
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    else
      choice["text"] = text;
    choices.push_back(std::move(choice));
  }
  json body = {{"id", fmt::format("{}-{}", r.chat ? "chatcmpl" : "cmpl", next_id++)},
               {"object", r.chat ? "chat.completion" : "text_completion"},
               {"created", static_cast<int64_t>(std::time(nullptr))},
               {"model", id},
               {"choices", choices},
               {"usage", usage(cs)}};
  metrics.request_seconds.observe(since(t0));
  reply(res, 200, body);
}

void Server::Impl::stream(const CompletionRequest& r, std::vector<Choice> cs,
                          const ClientConnection& conn, httplib::Response& res,
                          Clock::time_point t0) {
  auto shared = std::make_shared<std::vector<Choice>>(std::move(cs));
  auto cancel_all = [shared] {
    for (auto& c : *shared) c.req->cancel();
  };
  const std::string cid = fmt::format("{}-{}", r.chat ? "chatcmpl" : "cmpl", next_id++);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, r, shared, cid, t0, cancel_all, conn](size_t, httplib::DataSink& sink) {
        auto send = [&](const json& j) {
          const std::string line = "data: " + dump(j) + "\n\n";
          return sink.is_writable() && sink.write(line.data(), line.size());
        };
        auto chunk = [&](size_t index, const std::string& text, json finish) {
          json choice = {{"index", index}, {"finish_reason", finish}};
          if (r.chat)
            choice["delta"] = {{"content", text}};
          else
            choice["text"] = text;
          return json{{"id", cid},
                      {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
                      {"created", static_cast<int64_t>(std::time(nullptr))},
                      {"model", id},
                      {"choices", json::array({choice})}};
        };
        size_t holdback = 0;
        for (const auto& s : r.stop) holdback = std::max(holdback, s.size() - 1);
        bool first = true;
        for (size_t i = 0; i < shared->size(); ++i) {
          auto& c = (*shared)[i];
          size_t sent = 0;
          if (r.chat && !send(chunk(i, "", nullptr))) return cancel_all(), false;
          if (r.echo && !send(chunk(i, text_of(c.req->prompt), nullptr)))
            return cancel_all(), false;
          while (true) {
            auto s = c.req->wait(c.tokens.size(), Clock::now() + std::chrono::milliseconds(100));
            if (first && !s.tokens.empty()) {
              metrics.first_token_seconds.observe(since(t0));
              first = false;
            }
            c.tokens.insert(c.tokens.end(), s.tokens.begin(), s.tokens.end());
            bool stopped = false;
            const std::string text = render(c.tokens, r.stop, &stopped);
            size_t upto = s.done ? text.size() : utf8_complete(text);
            if (!s.done && !stopped)
              upto = upto > holdback ? std::min(upto, text.size() - holdback) : 0;
            if (upto > sent) {
              json ch = chunk(i, text.substr(sent, upto - sent), nullptr);
              if (r.gen.logprobs >= 0 && !s.tokens.empty())
                ch["choices"][0]["logprobs"] = logprobs_json(r, {}, s, s.tokens);
              if (!send(ch)) return cancel_all(), false;
              sent = upto;
            }
            // A closed connection stays writable (to the first failed write): poll it too, for a
            // stream that has nothing to send yet (queued, or held back before a stop string).
            if (!s.done && (!sink.is_writable() || conn.closed())) return cancel_all(), false;
            if (!s.done) continue;
            if (s.finish_reason != "length" && s.finish_reason != "stop") {
              json err =
                  error_body(500, "server_error", s.finish_reason,
                             s.error.empty() ? "the request ended: " + s.finish_reason : s.error);
              send(err);
              break;
            }
            c.last = std::move(s);
            if (!send(chunk(i, "", stopped ? "stop" : c.last.finish_reason))) return false;
            break;
          }
        }
        const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
        metrics.request_seconds.observe(since(t0));
        sink.done();
        return true;
      },
      [cancel_all](bool ok) {
        if (!ok) cancel_all();
      });
}

void Server::Impl::handle(const httplib::Request& req, httplib::Response& res, bool chat) {
  const auto t0 = Clock::now();
  try {
    const auto r = parse_request(req.body, chat, tok.get(), lim, &chat_template);
    // Found before submitting: a client that resets the connection cannot be looked up.
    const ClientConnection conn(req.remote_addr, req.remote_port, req.local_port);
    auto cs = submit(r);
    if (r.stream)
      stream(r, std::move(cs), conn, res, t0);
    else
      complete(r, std::move(cs), conn, res, t0);
  } catch (const ApiError& e) {
    reply_error(res, e);
  } catch (const std::exception& e) {
    // A tokenizer or decoder error on this request's data: the client's problem, not a crash.
    reply_error(res, bad_request(e.what(), "invalid_value"));
  }
}

void Server::Impl::routes() {
  http.Post("/v1/completions",
            [this](const httplib::Request& q, httplib::Response& s) { handle(q, s, false); });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& q, httplib::Response& s) { handle(q, s, true); });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& s) {
    reply(s, 200,
          {{"object", "list"},
           {"data", json::array({{{"id", id},
                                  {"object", "model"},
                                  {"created", 0},
                                  {"owned_by", "seqlab"},
                                  {"chat_template", chat_template.name()}}})}});
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& s) {
    if (stopping)
      reply(s, 503, {{"status", "shutting down"}});
    else
      reply(s, 200, {{"status", "ok"}});
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& s) {
    s.set_content(metrics.text(*sched), "text/plain; version=0.0.4");
  });
  http.set_error_handler([this](const httplib::Request& q, httplib::Response& s) {
    if (!s.body.empty()) return;
    const int st = s.status;
    const std::string code = st == 404 ? "not_found" : st == 413 ? "request_too_large" : "error";
    const std::string msg =
        st == 404   ? fmt::format("no route for {} {}", q.method, q.path)
        : st == 413 ? fmt::format("the body is larger than {} bytes", cfg.max_body_bytes)
                    : fmt::format("HTTP {}", st);
    reply(s, st, error_body(st, st >= 500 ? "server_error" : "invalid_request_error", code, msg));
  });
  http.set_exception_handler(
      [this](const httplib::Request&, httplib::Response& s, std::exception_ptr ep) {
        std::string msg = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          msg = e.what();
        } catch (...) {
        }
        reply(s, 500, error_body(500, "server_error", "internal_error", msg));
      });
  http.set_logger(
      [this](const httplib::Request&, const httplib::Response& s) { metrics.response(s.status); });
}

Server::Server(const std::string& model_dir, ServeConfig cfg) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.cfg = cfg;
  SEQLAB_CHECK(cfg.max_prompt_tokens >= 1, "--max-prompt-tokens must be >= 1");
  SEQLAB_CHECK(cfg.max_output_tokens >= 1, "--max-output-tokens must be >= 1");
  SEQLAB_CHECK(cfg.max_body_bytes >= 64, "--max-body-bytes must be >= 64");
  SEQLAB_CHECK(cfg.timeout_s > 0, "--timeout must be > 0");
  m.id = std::filesystem::path(model_dir).lexically_normal().filename().string();
  if (m.id.empty())
    m.id = std::filesystem::path(model_dir).lexically_normal().parent_path().filename().string();
  auto lm = load_model_dir(model_dir);
  SEQLAB_CHECK(lm.config.head == "lm", "{} is not a language model (its head is '{}')", model_dir,
               lm.config.head);
  if (lm.model->adapters) lm.model->merge_adapters();
  lm.model->eval();
  m.tok = model_tokenizer(lm, model_dir);
  m.chat_template = ChatTemplate::load(model_dir);  // logged once bound (bind())
  SchedulerConfig sc = cfg.scheduler;
  sc.weights = cfg.weights.empty() ? lm.weights : parse_weight_format(cfg.weights);
  m.sched = std::make_unique<Scheduler>(*lm.model, sc);
  m.lim.max_prompt_tokens = cfg.max_prompt_tokens;
  m.lim.max_output_tokens = cfg.max_output_tokens;
  m.lim.max_sequence = m.sched->max_sequence();
  m.lim.vocab_size = m.sched->vocab_size();
  const int64_t threads = cfg.http_threads > 0
                              ? cfg.http_threads
                              : cfg.scheduler.max_batch + cfg.scheduler.max_queue + 4;
  m.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.http.set_payload_max_length(cfg.max_body_bytes);
  m.http.set_read_timeout(30);
  // An idle keep-alive connection holds its thread until this runs out, and shutdown waits for
  // every thread: keep it short.
  m.http.set_keep_alive_timeout(1);
  m.routes();
}

Server::~Server() {
  shutdown(0);
}

int Server::bind() {
  auto& m = *impl_;
  int port = m.cfg.port;
  if (port == 0) {
    port = m.http.bind_to_any_port(m.cfg.host);
    SEQLAB_CHECK(port > 0, "serve: cannot bind {} to any port", m.cfg.host);
  } else {
    SEQLAB_CHECK(m.http.bind_to_port(m.cfg.host, port), "serve: cannot bind {}:{}", m.cfg.host,
                 port);
  }
  m.http.raise_backlog();
  // Logged here, not when loading: a server that fails to start says one line, its error.
  if (m.chat_template.is_model())
    log_info("serve: chat template: the model's (tokenizer_config.json)");
  else if (m.chat_template.refused())
    log_warn("serve: chat template: plain; the model's is refused: {}", m.chat_template.reason());
  else
    log_info("serve: chat template: plain ({})", m.chat_template.reason());
  return port;
}

void Server::run() {
  impl_->http.listen_after_bind();
}

void Server::shutdown(double grace_s) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.shutdown_mu);
  if (!m.sched) return;
  m.stopping = true;
  m.http.stop();
  m.sched->drain(std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)));
}

const std::string& Server::model_id() const {
  return impl_->id;
}

}  // namespace seqlab::serve
