// A client that closes its connection while its non-streaming completion is decoding, or still
// queued, cancels it: the request leaves the batch (or the queue) at once, frees its slot, and
// counts in seqlab_requests_cancelled_total and as HTTP 499. So does a queued stream's client.
// Requests over raw sockets, so that closing one is exactly a client going away; a GRU model (no
// context limit), whose 10^6 max_tokens take over 10 s here, against the tens of milliseconds a
// cancellation takes (each check allows 2 s).
#include "seqlab/serve/server.h"

#include "serve_testing.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

using namespace seqlab;
using namespace seqlab::testing;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLong = 1000000;  // max_tokens of a request that would run for minutes

// Sends one HTTP request on a fresh connection and returns its socket, without reading a reply.
int send_raw(int port, const std::string& path, const json& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string b = body.dump();
  const std::string req = "POST " + path +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(b.size()) + "\r\n\r\n" + b;
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  return fd;
}

// Polls until ok() holds, for up to `limit`; whether it held.
bool eventually(const std::function<bool()>& ok, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok();
}

// seqlab_http_responses_total{code="499"}, or 0.
double responses_499(const Running& srv) {
  auto r = srv.client().Get("/metrics");
  if (!r) return -1;
  const std::string key = "seqlab_http_responses_total{code=\"499\"} ";
  const auto at = r->body.find(key);
  return at == std::string::npos ? 0 : std::stod(r->body.substr(at + key.size()));
}

serve::ServeConfig one_slot() {
  serve::ServeConfig cfg;
  cfg.scheduler.max_batch = 1;
  cfg.scheduler.max_queue = 4;
  cfg.max_output_tokens = kLong;
  return cfg;
}

}  // namespace

TEST(ServeDisconnect, ClosingTheConnectionCancelsADecodingCompletion) {
  Running srv(make_model("gru"), one_slot());
  const int fd = send_raw(srv.port, "/v1/completions", greedy("long", kLong));
  ASSERT_GE(fd, 0);
  // Decoding: in the batch, tokens flowing.
  ASSERT_TRUE(eventually(
      [&] {
        return metric(srv, "seqlab_requests_active") == 1 &&
               metric(srv, "seqlab_generated_tokens_total") > 0;
      },
      std::chrono::seconds(10)));
  const auto t0 = Clock::now();
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return metric(srv, "seqlab_requests_cancelled_total") == 1; },
                         std::chrono::seconds(2)));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(metric(srv, "seqlab_requests_active"), 0);
  EXPECT_LT(metric(srv, "seqlab_generated_tokens_total"), kLong);
  EXPECT_EQ(metric(srv, "seqlab_requests_finished_total"), 0);
  EXPECT_TRUE(eventually([&] { return responses_499(srv) == 1; }, std::chrono::seconds(2)));
  // The slot is free: the next request is served.
  EXPECT_EQ(srv.post("/v1/completions", greedy("b", 2).dump()).first, 200);
}

TEST(ServeDisconnect, ClosingTheConnectionTakesQueuedRequestsOutOfTheQueue) {
  Running srv(make_model("gru"), one_slot());
  // The only slot, held by a long completion.
  const int holder = send_raw(srv.port, "/v1/completions", greedy("hold", kLong));
  ASSERT_GE(holder, 0);
  ASSERT_TRUE(eventually([&] { return metric(srv, "seqlab_requests_active") == 1; },
                         std::chrono::seconds(10)));
  // A chat completion behind it, and a streamed completion (which writes nothing while it waits),
  // queued; their clients leave.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                     {"max_tokens", kLong},
                     {"ignore_eos", true}};
  json streamed = greedy("s", kLong);
  streamed["stream"] = true;
  const int queued_chat = send_raw(srv.port, "/v1/chat/completions", chat);
  const int queued_stream = send_raw(srv.port, "/v1/completions", streamed);
  ASSERT_GE(queued_chat, 0);
  ASSERT_GE(queued_stream, 0);
  ASSERT_TRUE(
      eventually([&] { return metric(srv, "seqlab_queue_depth") == 2; }, std::chrono::seconds(10)));
  ::close(queued_chat);
  ::close(queued_stream);
  EXPECT_TRUE(eventually([&] { return metric(srv, "seqlab_requests_cancelled_total") == 2; },
                         std::chrono::seconds(2)));
  EXPECT_EQ(metric(srv, "seqlab_queue_depth"), 0);
  EXPECT_EQ(metric(srv, "seqlab_requests_active"), 1);  // the holder still decodes
  // Then the holder's client leaves too, and the slot serves the next request.
  ::close(holder);
  EXPECT_TRUE(eventually([&] { return metric(srv, "seqlab_requests_cancelled_total") == 3; },
                         std::chrono::seconds(2)));
  EXPECT_EQ(metric(srv, "seqlab_requests_active"), 0);
  EXPECT_EQ(srv.post("/v1/completions", greedy("b", 2).dump()).first, 200);
}
