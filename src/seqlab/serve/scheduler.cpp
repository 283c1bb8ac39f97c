#include "seqlab/serve/scheduler.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/infer/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace seqlab::serve {

using Clock = std::chrono::steady_clock;

Request::Snapshot Request::wait(size_t seen, Clock::time_point until) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, until, [&] { return out_.done || out_.tokens.size() > seen; });
  Snapshot s;
  s.done = out_.done;
  s.finish_reason = out_.finish_reason;
  s.error = out_.error;
  s.cached_tokens = out_.cached_tokens;
  if (seen < out_.tokens.size()) s.tokens.assign(out_.tokens.begin() + seen, out_.tokens.end());
  if (out_.done) s.prompt_logprobs = out_.prompt_logprobs;
  return s;
}

void Request::emit(TokenInfo t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    out_.tokens.push_back(std::move(t));
  }
  cv_.notify_all();
}

void Request::finish(const std::string& reason, const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    out_.done = true;
    out_.finish_reason = reason;
    out_.error = error;
  }
  cv_.notify_all();
}

Scheduler::Scheduler(SeqModelImpl& model, SchedulerConfig cfg)
    : fm_(model, cfg.weights),
      cfg_(cfg),
      V_(fm_.vocab_size()),
      max_seq_(infer::max_sequence(model)),
      cache_(cfg.cache_bytes) {
  SEQLAB_CHECK(cfg_.max_batch >= 1, "--max-batch must be >= 1, got {}", cfg_.max_batch);
  SEQLAB_CHECK(cfg_.max_queue >= 0, "--max-queue must be >= 0, got {}", cfg_.max_queue);
  SEQLAB_CHECK(cfg_.cache_bytes >= 0, "--cache-bytes must be >= 0, got {}", cfg_.cache_bytes);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Scheduler::Submitted Scheduler::submit(const std::shared_ptr<Request>& r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || draining_) return Submitted::stopping;
    if (static_cast<int64_t>(queue_.size()) >= cfg_.max_queue &&
        stats_.active.load() >= cfg_.max_batch)
      return Submitted::queue_full;
    queue_.push_back(r);
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return Submitted::ok;
}

void Scheduler::drain(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  const auto until = Clock::now() + grace;
  while (Clock::now() < until && stats_.active.load() + stats_.queued.load() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::admit() {
  std::vector<std::shared_ptr<Request>> fresh, gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A request cancelled while it waits (its client left) leaves the queue now, not when a slot
    // frees up for it.
    const auto kept = std::stable_partition(queue_.begin(), queue_.end(),
                                            [](const auto& r) { return !r->cancelled(); });
    gone.assign(kept, queue_.end());
    queue_.erase(kept, queue_.end());
    while (!queue_.empty() &&
           static_cast<int64_t>(active_.size() + fresh.size()) < cfg_.max_batch) {
      fresh.push_back(queue_.front());
      queue_.pop_front();
    }
    stats_.queued = static_cast<int64_t>(queue_.size());
    // Counted as active before any of them emits a token: submit() reads this gauge, and a
    // client that already sees tokens must not find the slot free (tests/test_serve.cpp's 429).
    stats_.active = static_cast<int64_t>(active_.size() + fresh.size());
  }
  for (auto& r : gone) retire(*r, "cancelled");
  for (auto& r : fresh) {
    r->sampler_ = std::make_unique<infer::Sampler>(r->params.sampler, V_);
    std::optional<SessionCache::Hit> hit;
    if (!r->params.echo) hit = cache_.lookup(r->prompt, r->params.session);
    if (hit) {
      r->state_ = fm_.unpack_state(hit->state);  // the cache keeps states packed
      r->prefilled_ = hit->tokens;
      std::lock_guard<std::mutex> lock(r->mu_);
      r->out_.cached_tokens = hit->tokens;
    } else {
      r->state_ = fm_.init_state();
    }
    stats_.prompt_tokens += static_cast<int64_t>(r->prompt.size());
    stats_.cached_prompt_tokens += r->prefilled_;
    active_.push_back(std::move(r));
  }
}

TokenInfo Scheduler::token_info(const float* logits, int64_t token, int64_t k) {
  // log-softmax in double: lse = max + log sum exp(l - max).
  const float mx = *std::max_element(logits, logits + V_);
  double sum = 0;
  for (int64_t i = 0; i < V_; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  TokenInfo t;
  t.token = token;
  t.logprob = static_cast<float>(logits[token] - lse);
  k = std::min(k, V_);
  if (k > 0) {
    std::vector<int32_t> idx(V_);
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int64_t i = 0; i < k; ++i)
      t.top.emplace_back(idx[i], static_cast<float>(logits[idx[i]] - lse));
  }
  return t;
}

void Scheduler::prefill_chunk(Request& r) {
  const int64_t P = static_cast<int64_t>(r.prompt.size());
  const int64_t n = std::min(infer::FastModel::kPrefillChunk, P - r.prefilled_);
  const int64_t* toks = r.prompt.data() + r.prefilled_;
  logits_.resize(std::max<size_t>(logits_.size(), V_));
  if (r.params.echo) {
    // Token by token: every prompt position's logits score the next prompt token.
    r.last_logits_.resize(V_);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = r.prefilled_ + i;
      if (at > 0) {
        auto info =
            token_info(r.last_logits_.data(), toks[i], std::max<int64_t>(r.params.logprobs, 0));
        std::lock_guard<std::mutex> lock(r.mu_);
        r.out_.prompt_logprobs.push_back(std::move(info));
      }
      fm_.step(toks[i], r.state_, r.last_logits_.data());
    }
  } else {
    fm_.prefill(toks, n, r.state_, logits_.data());
  }
  r.prefilled_ += n;
  if (r.prefilled_ < P) return;
  if (r.params.max_tokens == 0) return retire(r, "length");
  take_token(r, r.params.echo ? r.last_logits_.data() : logits_.data());
}

void Scheduler::take_token(Request& r, const float* logits) {
  const int64_t token = r.sampler_->sample(logits, r.state_.pos);
  if (token == r.params.eos) return retire(r, "stop");
  r.emit(r.params.logprobs >= 0 ? token_info(logits, token, r.params.logprobs)
                                : TokenInfo{token, 0.0f, {}});
  stats_.generated_tokens += 1;
  const auto& out = r.out_.tokens;  // only this thread writes it
  if (static_cast<int64_t>(out.size()) >= r.params.max_tokens) return retire(r, "length");
  if (r.stop_check && r.stop_check(out)) return retire(r, "stop");
  if (max_seq_ >= 0 && r.state_.pos >= max_seq_) return retire(r, "length");
  r.next_ = token;
}

void Scheduler::decode_step(std::vector<Request*>& rows) {
  const int64_t B = static_cast<int64_t>(rows.size());
  if (B == 0) return;
  std::vector<int64_t> tokens(B);
  std::vector<infer::DecoderState*> states(B);
  for (int64_t i = 0; i < B; ++i) {
    tokens[i] = rows[i]->next_;
    states[i] = &rows[i]->state_;
  }
  logits_.resize(std::max<size_t>(logits_.size(), B * V_));
  fm_.step_batch(tokens.data(), states.data(), B, logits_.data());
  stats_.batch_steps += 1;
  stats_.batch_rows += B;
  stats_.last_batch = B;
  for (int64_t i = 0; i < B; ++i) take_token(*rows[i], logits_.data() + i * V_);
}

void Scheduler::retire(Request& r, const std::string& reason, const std::string& error) {
  r.finished_ = true;
  if (reason == "length" || reason == "stop") {
    // Keep the state under the tokens it has consumed: the prompt, then the generated tokens
    // but the last (sampled, never fed).
    std::vector<int64_t> seq(r.prompt.begin(), r.prompt.end());
    for (const auto& t : r.out_.tokens)
      if (static_cast<int64_t>(seq.size()) < r.state_.pos) seq.push_back(t.token);
    if (static_cast<int64_t>(seq.size()) == r.state_.pos)
      cache_.insert(std::move(seq), fm_.pack_state(r.state_), r.params.session);
    stats_.requests_finished += 1;
  } else if (reason == "error") {
    stats_.requests_failed += 1;
  } else {
    stats_.requests_cancelled += 1;
  }
  r.state_ = {};
  r.finish(reason, error);
}

void Scheduler::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active_.empty(); });
      if (stopping_) break;
    }
    admit();
    const auto now = Clock::now();
    std::vector<Request*> rows;
    for (auto& r : active_) {
      if (r->cancelled()) {
        retire(*r, "cancelled");
      } else if (now > r->params.deadline) {
        retire(*r, "timeout", "the request ran past its timeout");
      } else if (r->prefilled_ < static_cast<int64_t>(r->prompt.size())) {
        try {
          prefill_chunk(*r);
        } catch (const std::exception& e) {
          retire(*r, "error", e.what());
        }
      } else {
        rows.push_back(r.get());
      }
    }
    try {
      decode_step(rows);
    } catch (const std::exception& e) {
      for (auto* r : rows)
        if (!r->finished_) retire(*r, "error", e.what());
    }
    active_.erase(
        std::remove_if(active_.begin(), active_.end(), [](const auto& r) { return r->finished_; }),
        active_.end());
    stats_.active = static_cast<int64_t>(active_.size());
  }
  // Stopped: whatever is left is cancelled.
  for (auto& r : active_) retire(*r, "cancelled", "the server is shutting down");
  active_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : queue_) retire(*r, "cancelled", "the server is shutting down");
  queue_.clear();
  stats_.active = 0;
  stats_.queued = 0;
}

}  // namespace seqlab::serve
