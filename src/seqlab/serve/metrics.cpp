#include "seqlab/serve/metrics.h"

#include <fmt/format.h>

namespace seqlab::serve {

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  counts_[i] += 1;
  sum_ += seconds;
  n_ += 1;
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  int64_t cum = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cum += counts_[i];
    s += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cum);
  }
  s += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, n_, name, sum_,
                   name, n_);
  return s;
}

void Metrics::response(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  responses_[status] += 1;
}

namespace {

std::string metric(const char* name, const char* type, const char* help, double value) {
  return fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

}  // namespace

std::string Metrics::text(const Scheduler& sch) const {
  const auto& st = sch.stats();
  std::string s =
      "# HELP seqlab_http_responses_total HTTP responses by status\n"
      "# TYPE seqlab_http_responses_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [status, n] : responses_)
      s += fmt::format("seqlab_http_responses_total{{code=\"{}\"}} {}\n", status, n);
  }
  s += metric("seqlab_requests_finished_total", "counter",
              "generation requests that finished (length or stop)", st.requests_finished.load());
  s += metric("seqlab_requests_cancelled_total", "counter",
              "generation requests cancelled (disconnect, timeout, shutdown)",
              st.requests_cancelled.load());
  s += metric("seqlab_requests_failed_total", "counter", "generation requests that failed",
              st.requests_failed.load());
  s += metric("seqlab_prompt_tokens_total", "counter", "prompt tokens received",
              st.prompt_tokens.load());
  s += metric("seqlab_prompt_tokens_cached_total", "counter",
              "prompt tokens supplied by the session cache (not prefilled)",
              st.cached_prompt_tokens.load());
  s += metric("seqlab_generated_tokens_total", "counter", "tokens generated",
              st.generated_tokens.load());
  s +=
      metric("seqlab_batch_steps_total", "counter", "batched decoder steps", st.batch_steps.load());
  s += metric("seqlab_batch_rows_total", "counter", "rows over all batched decoder steps",
              st.batch_rows.load());
  s += metric("seqlab_batch_size", "gauge", "rows in the last batched decoder step",
              st.last_batch.load());
  s += metric("seqlab_requests_active", "gauge", "requests in the batch", st.active.load());
  s += metric("seqlab_queue_depth", "gauge", "requests waiting for a batch slot", st.queued.load());
  s += metric("seqlab_cache_sessions", "gauge", "decoder states in the session cache",
              sch.cache().size());
  s +=
      metric("seqlab_cache_bytes", "gauge", "bytes held by the session cache", sch.cache().bytes());
  s += metric("seqlab_cache_budget_bytes", "gauge", "the session cache's budget (--cache-bytes)",
              sch.cache().budget());
  s += metric("seqlab_cache_evictions_total", "counter", "session cache entries evicted",
              sch.cache().evictions());
  s += metric("seqlab_state_bytes", "gauge", "bytes of one sequence's decoder state",
              sch.state_bytes());
  s += request_seconds.text("seqlab_request_seconds", "time from arrival to the last token");
  s += first_token_seconds.text("seqlab_time_to_first_token_seconds",
                                "time from arrival to the first generated token");
  return s;
}

}  // namespace seqlab::serve
