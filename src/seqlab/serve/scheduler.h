// The scheduler: continuous batching over one FastModel (llama.cpp's server loop, our own).
//
// One thread owns the model. Each iteration it
//   1. drops the queued requests that were cancelled, and admits queued requests while fewer than
//      max_batch are active (a new request starts from the session cache's longest matching
//      prefix, or from an empty state);
//   2. prefills one chunk (FastModel::kPrefillChunk tokens) of every request still in its
//      prompt, and samples the first token of each whose prompt is done;
//   3. advances every decoding request by one token in one FastModel::step_batch (one pass over
//      the weights for all rows) and samples each row's next token;
//   4. retires at once every request that finished (length, stop, eos), was cancelled or ran past
//      its deadline, keeping a finished request's state in the session cache.
// Sampling is infer::Sampler's rule with the request's own seed, drawing the token at sequence
// position p from (seed, p): a request's tokens do not depend on what else is in the batch (its
// greedy output in a batch equals its output alone; tests/test_serve.cpp).
//
// Requests are shared between the scheduler and the thread that submitted them (an HTTP handler),
// which waits on the request for new tokens (Request::wait) and may cancel it at any time.
#pragma once

#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/sampler.h"
#include "seqlab/serve/session_cache.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace seqlab::serve {

struct GenParams {
  int64_t max_tokens = 16;
  infer::SamplerConfig sampler;
  int64_t logprobs = -1;  // -1: none; k >= 0: the sampled token's log-probability and the top k
  bool echo = false;      // the prompt's log-probabilities too (the cache is bypassed)
  int64_t eos = -1;       // a token that ends the generation (not returned); -1: none
  std::string session;    // the session cache's name for this conversation ("" = none)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// One token with its log-probability under the model (log-softmax of the logits, before
// temperature) and, when asked, the k most probable tokens at that position.
struct TokenInfo {
  int64_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int64_t, float>> top;
};

class Request {
 public:
  Request(std::vector<int64_t> prompt, GenParams params)
      : prompt(std::move(prompt)), params(std::move(params)) {}
  const std::vector<int64_t> prompt;
  const GenParams params;
  // Called on the scheduler thread after each generated token, with every generated token so
  // far; true ends the request with finish reason "stop" (the HTTP layer's stop strings).
  std::function<bool(const std::vector<TokenInfo>&)> stop_check;

  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

  // Waits until more than `seen` tokens were generated or the request ended, or until `until`.
  // Returns the results so far, `tokens` holding only those after the first `seen`.
  struct Snapshot {
    std::vector<TokenInfo> tokens;           // generated so far
    std::vector<TokenInfo> prompt_logprobs;  // echo: one per prompt token after the first
    bool done = false;
    std::string finish_reason;  // length | stop | cancelled | timeout | error
    std::string error;
    int64_t cached_tokens = 0;  // the prompt's tokens the session cache supplied
  };
  Snapshot wait(size_t seen, std::chrono::steady_clock::time_point until);

 private:
  friend class Scheduler;
  void emit(TokenInfo t);
  void finish(const std::string& reason, const std::string& error = "");

  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  Snapshot out_;
  // Scheduler-side state.
  infer::DecoderState state_;
  int64_t prefilled_ = 0;  // prompt tokens consumed
  int64_t next_ = -1;      // the sampled token not consumed yet
  std::unique_ptr<infer::Sampler> sampler_;
  std::vector<float> last_logits_;  // echo: the logits after the last prompt token consumed
  bool finished_ = false;
};

struct SchedulerConfig {
  int64_t max_batch = 8;   // requests decoded together
  int64_t max_queue = 64;  // requests waiting beyond them; submit() refuses more
  int64_t cache_bytes = int64_t{256} << 20;
  WeightFormat weights = WeightFormat::f32;  // the fast decoder's (core/quant.h)
};

// What /metrics reports; updated by the scheduler, read by anyone.
struct SchedulerStats {
  std::atomic<int64_t> requests_finished{0}, requests_cancelled{0}, requests_failed{0};
  std::atomic<int64_t> prompt_tokens{0}, cached_prompt_tokens{0}, generated_tokens{0};
  std::atomic<int64_t> batch_steps{0}, batch_rows{0};  // step_batch calls and rows summed
  std::atomic<int64_t> active{0}, queued{0}, last_batch{0};
};

class Scheduler {
 public:
  Scheduler(SeqModelImpl& model, SchedulerConfig cfg);
  ~Scheduler();  // stops the thread; requests still running end as "cancelled"

  // Queues a request. Checks nothing else: the caller validates tokens and lengths
  // (max_sequence()) and gives a non-empty prompt.
  enum class Submitted { ok, queue_full, stopping };
  Submitted submit(const std::shared_ptr<Request>& r);
  // Stops admitting; waits up to `grace` for the active and queued requests to finish, then
  // cancels the rest and stops the thread.
  void drain(std::chrono::milliseconds grace);

  int64_t vocab_size() const { return V_; }
  // The longest sequence (prompt + output) a request may reach; -1 = unbounded.
  int64_t max_sequence() const { return max_seq_; }
  int64_t state_bytes() const { return fm_.state_size() * static_cast<int64_t>(sizeof(float)); }
  const SchedulerStats& stats() const { return stats_; }
  const SessionCache& cache() const { return cache_; }

 private:
  void loop();
  void admit();
  void prefill_chunk(Request& r);
  void decode_step(std::vector<Request*>& rows);
  // Samples r's next token from logits at sequence position pos, emits it and ends r when done.
  void take_token(Request& r, const float* logits);
  void retire(Request& r, const std::string& reason, const std::string& error = "");
  TokenInfo token_info(const float* logits, int64_t token, int64_t k);

  infer::FastModel fm_;
  SchedulerConfig cfg_;
  int64_t V_, max_seq_;
  SessionCache cache_;
  SchedulerStats stats_;
  std::vector<float> logits_, lsm_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> queue_;
  std::vector<std::shared_ptr<Request>> active_;  // scheduler thread only
  bool stopping_ = false, draining_ = false;
  std::thread thread_;
};

}  // namespace seqlab::serve
