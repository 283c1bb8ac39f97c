// seqlab serve over real sockets on 127.0.0.1 (port 0: a free port per server): a request's greedy
// output in a batch equals its output alone; streaming equals non-streaming and ends with
// `data: [DONE]`; logprobs and echo equal the LibTorch model's log-softmax; a session-cache hit
// equals a cold run and prefills only the new tokens; LRU eviction under a small budget; the error
// bodies (400, 404, 413, 429); a disconnect mid-stream cancels the request; shutdown drains.
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/serve/api.h"
#include "seqlab/serve/http_lib.h"
#include "seqlab/serve/server.h"
#include "seqlab/serve/session_cache.h"
#include "seqlab/tasks/task.h"

#include "serve_testing.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

using namespace seqlab;
using namespace seqlab::testing;
using nlohmann::json;

namespace {

// The data lines of an SSE body.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

void expect_error(const std::pair<int, json>& r, int status, const std::string& code = "") {
  EXPECT_EQ(r.first, status) << r.second.dump();
  ASSERT_TRUE(r.second.is_object()) << r.second.dump();
  ASSERT_TRUE(r.second.contains("error")) << r.second.dump();
  const auto& e = r.second["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("code"));
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.second.dump();
  }
}

class ServeArch : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(ServeArch, GreedyInABatchEqualsAlone) {
  const auto dir = make_model(GetParam());
  serve::ServeConfig cfg;
  cfg.scheduler.max_batch = 8;
  Running srv(dir, cfg);
  const std::vector<std::string> prompts = {"Hello", "a", "The quick brown fox", "xy", "zzz top"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    auto r = srv.post("/v1/completions", greedy(p, 20).dump());
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["usage"]["completion_tokens"], 20);
    alone.push_back(r.second["choices"][0]["text"]);
  }
  std::vector<std::future<std::pair<int, json>>> fs;
  for (const auto& p : prompts)
    fs.push_back(std::async(std::launch::async,
                            [&, p] { return srv.post("/v1/completions", greedy(p, 20).dump()); }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto r = fs[i].get();
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["choices"][0]["text"], alone[i]) << prompts[i];
  }
  // And an array of prompts is one choice each, in order.
  auto r = srv.post("/v1/completions", greedy(json(prompts), 20).dump());
  ASSERT_EQ(r.first, 200) << r.second.dump();
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(r.second["choices"][i]["text"], alone[i]);
}

TEST_P(ServeArch, StreamEqualsNonStreamAndEndsWithDone) {
  const auto dir = make_model(GetParam());
  Running srv(dir, {});
  json body = greedy("Stream me", 15);
  body["temperature"] = 0.8;
  body["seed"] = 42;
  auto plain = srv.post("/v1/completions", body.dump());
  ASSERT_EQ(plain.first, 200);
  body["stream"] = true;
  auto c = srv.client();
  auto res = c.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto lines = sse_data(res->body);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.back(), "[DONE]");
  std::string text;
  json finish;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    auto j = json::parse(lines[i]);
    EXPECT_EQ(j["object"], "text_completion");
    text += j["choices"][0]["text"].get<std::string>();
    finish = j["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, plain.second["choices"][0]["text"]);
  EXPECT_EQ(finish, "length");
  // Chat streams deltas.
  json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"max_tokens", 5},
               {"temperature", 0},
               {"ignore_eos", true},
               {"stream", true}};
  auto cres = c.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(cres);
  auto clines = sse_data(cres->body);
  EXPECT_EQ(clines.back(), "[DONE]");
  EXPECT_EQ(json::parse(clines[0])["object"], "chat.completion.chunk");
}

TEST_P(ServeArch, LogprobsAndEchoEqualTheTorchModel) {
  const auto dir = make_model(GetParam());
  Running srv(dir, {});
  const std::vector<int64_t> prompt = {72, 101, 108, 108, 111, 32, 119};
  json body = {{"prompt", prompt}, {"max_tokens", 3}, {"temperature", 0},
               {"echo", true},     {"logprobs", 4},   {"ignore_eos", true}};
  auto r = srv.post("/v1/completions", body.dump());
  ASSERT_EQ(r.first, 200) << r.second.dump();
  const auto& lp = r.second["choices"][0]["logprobs"];
  const size_t P = prompt.size(), n = P + 3;
  ASSERT_EQ(lp["tokens"].size(), n);
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["top_logprobs"].size(), n);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  ASSERT_EQ(lp["token_ids"].size(), n);
  // Alternatives are keyed by their text: pieces that are parts of UTF-8 characters may share one.
  for (size_t i = 1; i < n; ++i) {
    EXPECT_GE(lp["top_logprobs"][i].size(), 1u) << i;
    EXPECT_LE(lp["top_logprobs"][i].size(), 4u) << i;
  }
  // The reference: the LibTorch model's log-softmax over the whole sequence.
  std::vector<int64_t> seq = prompt;
  for (size_t i = 0; i < P; ++i) EXPECT_EQ(lp["token_ids"][i], prompt[i]);
  for (size_t i = P; i < n; ++i) seq.push_back(lp["token_ids"][i].get<int64_t>());
  auto lm = load_model_dir(dir);
  lm.model->eval();
  torch::NoGradGuard ng;
  auto x = torch::tensor(seq, torch::kLong).unsqueeze(0);
  auto ls = torch::log_softmax(lm.model->forward(x).squeeze(0), -1);  // [T,V]
  for (size_t i = 1; i < n; ++i) {
    const double want = ls[i - 1][seq[i]].item<double>();
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), want, 1e-4) << "position " << i;
    // The top alternatives are the largest log-probabilities, the first the maximum.
    double best = -1e9;
    for (auto& [k, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(best, ls[i - 1].max().item<double>(), 1e-4);
  }
  // Greedy: each generated token is the argmax.
  for (size_t i = P; i < n; ++i) EXPECT_EQ(ls[i - 1].argmax().item<int64_t>(), seq[i]);
  EXPECT_EQ(r.second["choices"][0]["text"].get<std::string>().substr(0, P), "Hello w");
}

TEST_P(ServeArch, ASessionCacheHitEqualsAColdRunAndPrefillsOnlyNewTokens) {
  const auto dir = make_model(GetParam());
  Running warm(dir, {});
  serve::ServeConfig cold_cfg;
  cold_cfg.scheduler.cache_bytes = 0;
  Running cold(dir, cold_cfg);
  // Token ids throughout: a random model's bytes need not be valid UTF-8 text.
  auto run = [](const Running& srv, const std::vector<int64_t>& prompt, int max_tokens,
                const std::string& session) {
    json b = greedy(prompt, max_tokens);
    b["logprobs"] = 0;
    if (!session.empty()) b["session"] = session;
    auto r = srv.post("/v1/completions", b.dump());
    EXPECT_EQ(r.first, 200) << r.second.dump();
    return r.second;
  };
  auto generated = [](const json& r) {
    auto ids = r["choices"][0]["logprobs"]["token_ids"].get<std::vector<int64_t>>();
    return std::vector<int64_t>(ids.end() - r["usage"]["completion_tokens"].get<int64_t>(),
                                ids.end());
  };
  const std::vector<int64_t> p1 = {79, 110, 99, 101, 32, 117, 112, 111, 110};
  const auto t1 = generated(run(warm, p1, 6, ""));
  ASSERT_EQ(t1.size(), 6u);
  // The entry holds the state after 14 tokens at its used size (a softmax KV cache's 14 rows per
  // layer and kv head, not its preallocated max_len = 128), its 14 tokens and the bookkeeping.
  const int64_t state_floats =
      GetParam() == "softmax" ? 2 * 2 * 14 * 32 : 2 * 4 * (8 * 8 + 8 + 1);  // t2r: F = Dh = 8
  EXPECT_EQ(metric(warm, "seqlab_cache_bytes"),
            4 * state_floats + 8 * 14 + serve::SessionCache::kEntryOverhead);
  // The next turn extends the first: prompt + completion + new tokens.
  auto p2 = p1;
  p2.insert(p2.end(), t1.begin(), t1.end());
  for (int64_t t : {32, 97, 103, 97, 105, 110}) p2.push_back(t);
  const auto hit = run(warm, p2, 8, ""), ref = run(cold, p2, 8, "");
  EXPECT_EQ(generated(hit), generated(ref));
  // Equal to rounding: the cached state was built by other chunks of prefill than the cold one.
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(hit["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(),
                ref["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(), 1e-5);
  // The state after prompt + completion but its last token (sampled, never fed).
  EXPECT_EQ(hit["usage"]["prompt_tokens_details"]["cached_tokens"], p1.size() + t1.size() - 1);
  EXPECT_EQ(ref["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // A named session: its state is found when its tokens are a prefix of the new prompt.
  const std::vector<int64_t> s1 = {78, 97, 109, 101, 100};
  const auto u1 = generated(run(warm, s1, 4, "alice"));
  auto s2 = s1;
  s2.insert(s2.end(), u1.begin(), u1.end());
  s2.push_back(33);
  const auto r2 = run(warm, s2, 4, "alice");
  EXPECT_EQ(r2["usage"]["prompt_tokens_details"]["cached_tokens"], s1.size() + 3);
  EXPECT_EQ(generated(r2), generated(run(cold, s2, 4, "alice")));
}

INSTANTIATE_TEST_SUITE_P(Mixers, ServeArch, ::testing::Values("t2r", "softmax"),
                         [](const auto& info) { return info.param; });

TEST(SessionCache, EvictsTheLeastRecentlyUsedUnderItsBudget) {
  infer::DecoderState s;
  s.data.assign(100, 1.0f);  // 400 bytes
  const int64_t entry = 400 + 3 * 8 + serve::SessionCache::kEntryOverhead;
  serve::SessionCache cache(2 * entry + 10);  // room for two
  cache.insert({1, 2, 3}, s, "");
  cache.insert({4, 5, 6}, s, "");
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.bytes(), 2 * entry);
  ASSERT_TRUE(cache.lookup({1, 2, 3, 9}, ""));  // touches {1,2,3}
  cache.insert({7, 8, 9}, s, "");               // evicts {4,5,6}
  EXPECT_EQ(cache.size(), 2);
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_FALSE(cache.lookup({4, 5, 6, 1}, ""));
  auto hit = cache.lookup({1, 2, 3, 4, 5}, "");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tokens, 3);
  // The longest proper prefix wins; an equal sequence is no hit (nothing left to prefill).
  cache.insert({1, 2}, s, "");
  EXPECT_EQ(cache.lookup({1, 2, 3, 4}, "")->tokens, 3);
  EXPECT_FALSE(cache.lookup({7, 8, 9}, ""));
  // An entry larger than the budget is not kept; a zero budget keeps nothing.
  serve::SessionCache none(0);
  none.insert({1}, s, "x");
  EXPECT_EQ(none.size(), 0);
  EXPECT_FALSE(none.lookup({1, 2}, "x"));
}

TEST(Serve, ErrorsAreJsonWithTheRightStatus) {
  const auto dir = make_model("t2r");
  serve::ServeConfig cfg;
  cfg.max_body_bytes = 4096;
  cfg.max_prompt_tokens = 50;
  cfg.max_output_tokens = 100;
  Running srv(dir, cfg);
  expect_error(srv.post("/v1/completions", "{not json"), 400, "invalid_json");
  expect_error(srv.post("/v1/completions", "[1,2]"), 400, "invalid_json");
  expect_error(srv.post("/v1/completions", R"({"max_tokens": 3})"), 400, "prompt");
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "max_tokens": "3"})"), 400,
               "max_tokens");
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "max_tokens": -1})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "max_tokens": 101})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "max_tokens": 1e300})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "temperature": -1})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "top_p": 2})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "n": 2})"), 400, "n");
  expect_error(srv.post("/v1/completions", R"({"prompt": [1, 300]})"), 400, "prompt");
  expect_error(srv.post("/v1/completions", R"({"prompt": [-1]})"), 400, "prompt");
  expect_error(srv.post("/v1/completions", R"({"prompt": ""})"), 400, "prompt");
  expect_error(srv.post("/v1/completions", R"({"prompt": {"a": 1}})"), 400, "prompt");
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "stop": 3})"), 400, "stop");
  expect_error(srv.post("/v1/completions", json{{"prompt", std::string(60, 'a')}}.dump()), 400,
               "context_length_exceeded");
  expect_error(srv.post("/v1/chat/completions", R"({"messages": []})"), 400, "messages");
  expect_error(srv.post("/v1/chat/completions", R"({"messages": [{"role": 1}]})"), 400);
  expect_error(srv.post("/v1/completions", R"({"prompt": "a", "model": "nope"})"), 404,
               "model_not_found");
  expect_error(srv.post("/v1/nothing", "{}"), 404, "not_found");
  expect_error(srv.post("/v1/completions", json{{"prompt", std::string(5000, 'a')}}.dump()), 413,
               "request_too_large");
  // The server is still fine.
  auto ok = srv.post("/v1/completions", greedy("a", 2).dump());
  EXPECT_EQ(ok.first, 200);
  auto c = srv.client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"],
            std::filesystem::path(dir).filename().string());
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* m :
       {"seqlab_generated_tokens_total", "seqlab_queue_depth", "seqlab_cache_bytes",
        "seqlab_request_seconds_bucket", "seqlab_http_responses_total{code=\"400\"}"})
    EXPECT_NE(metrics->body.find(m), std::string::npos) << m;
}

// fuzz/fuzz_serve_request.cpp's finding: an error message that dumped the client's value recursed
// once per nesting level, and a body under the 1 MiB limit nests deep enough to overflow a stack.
TEST(Serve, ADeeplyNestedFieldIsA400NotAStackOverflow) {
  const int depth = 400000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  serve::Limits lim;
  lim.vocab_size = kV;
  auto code_of = [&](const std::string& body) {
    try {
      serve::parse_request(body, false, nullptr, lim);
    } catch (const serve::ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_LT(std::string(e.what()).size(), 200u);
      return e.code;
    }
    return std::string("accepted");
  };
  for (const std::string field : {"max_tokens", "model"})
    EXPECT_EQ(code_of(R"({"prompt": [1], ")" + field + "\": " + deep + "}"), field);
  EXPECT_EQ(code_of(R"({"prompt": [[1, )" + deep + "]]}"), "prompt");
}

TEST(Serve, AFullQueueIs429AndADisconnectCancels) {
  const auto dir = make_model("gru");  // no positions: a stream that never ends on its own
  serve::ServeConfig cfg;
  cfg.scheduler.max_batch = 1;
  cfg.scheduler.max_queue = 0;
  cfg.max_output_tokens = 1000000;
  Running srv(dir, cfg);
  // A long stream that the client drops after its third chunk, and not before the 429 below was
  // checked (under load the drop could otherwise free the slot first).
  std::promise<void> started, checked;
  auto checked_f = checked.get_future().share();
  std::thread client([&] {
    auto c = srv.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    json b = greedy("long", 1000000);
    b["stream"] = true;
    req.body = b.dump();
    req.set_header("Content-Type", "application/json");
    int chunks = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (++chunks == 1) started.set_value();
      if (chunks == 2) checked_f.wait();
      return chunks < 3;  // false: drop the connection
    };
    c.send(req);
  });
  started.get_future().wait();
  // The only slot is busy and the queue holds nothing: 429.
  expect_error(srv.post("/v1/completions", greedy("b", 2).dump()), 429, "queue_full");
  checked.set_value();
  client.join();
  // The dropped stream is cancelled and leaves the batch.
  for (int i = 0; i < 100 && metric(srv, "seqlab_requests_active") != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(metric(srv, "seqlab_requests_active"), 0);
  EXPECT_EQ(metric(srv, "seqlab_requests_cancelled_total"), 1);
  EXPECT_EQ(srv.post("/v1/completions", greedy("b", 2).dump()).first, 200);
}

TEST(Serve, ShutdownLetsTheRequestsInFlightFinish) {
  const auto dir = make_model("t2r");
  Running srv(dir, {});
  auto pending = std::async(std::launch::async,
                            [&] { return srv.post("/v1/completions", greedy("x", 60).dump()); });
  for (int i = 0; i < 200 && metric(srv, "seqlab_requests_active") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  srv.server->shutdown(30);
  auto r = pending.get();
  EXPECT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["usage"]["completion_tokens"], 60);
  EXPECT_EQ(srv.post("/v1/completions", greedy("x", 1).dump()).first, 0);  // no longer listening
}
