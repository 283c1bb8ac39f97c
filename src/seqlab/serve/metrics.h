// The server's Prometheus metrics (GET /metrics, text format 0.0.4): HTTP responses by status,
// latency histograms (whole request, time to first token), and the scheduler's counters and
// gauges (serve/scheduler.h: requests, tokens, queue depth, batch size, cached sessions, bytes).
#pragma once

#include "seqlab/serve/scheduler.h"

#include <array>
#include <map>
#include <mutex>
#include <string>

namespace seqlab::serve {

class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10,  30};
  void observe(double seconds);
  // The metric's lines: name_bucket{le=...}, name_sum, name_count.
  std::string text(const std::string& name, const std::string& help) const;

 private:
  mutable std::mutex mu_;
  std::array<int64_t, kBounds.size() + 1> counts_{};
  double sum_ = 0;
  int64_t n_ = 0;
};

class Metrics {
 public:
  void response(int status);
  Histogram request_seconds, first_token_seconds;
  std::string text(const Scheduler& s) const;

 private:
  mutable std::mutex mu_;
  std::map<int, int64_t> responses_;
};

}  // namespace seqlab::serve
