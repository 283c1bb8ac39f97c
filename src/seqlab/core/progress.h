// A progress bar on stderr for long work.
//
// On a terminal it redraws one line in place ("train  [#####.....]  512/1000  2.1 it/s  eta 4m
// loss 0.43"); when stderr is not a terminal (CI, a log file) it prints a plain line at most every
// few seconds and one at the end, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace seqlab {

class Progress {
 public:
  Progress(std::string label, int64_t total, int64_t start = 0);
  ~Progress();
  // Sets the count of finished units and an optional short status ("loss 0.43").
  void update(int64_t done, const std::string& status = "");
  // The same, with `partial` units' worth of the unfinished ones done too (a suite's running
  // cells: the sum of their fractions of their steps), of which `resumed` was done before this
  // run (the fractions the units started since had when they started: resumed cells). The rate
  // and the eta count them, so that hour-long units get an eta before the first one ends; the
  // shown count does not.
  void update(int64_t done, double partial, double resumed, const std::string& status);
  // Prints the final line (called by the destructor if not called before).
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  int64_t total_, start_, done_;
  double partial_ = 0, resumed_ = 0;
  std::string status_;
  bool tty_, finished_ = false;
  std::chrono::steady_clock::time_point t0_, last_draw_;
};

// Whether stderr is a terminal (progress bars redraw only there).
bool stderr_is_tty();

// Units per second so far: `done` + `partial` units after `elapsed` seconds, of which `start` +
// `resumed` were done before the clock started.
double progress_rate(double elapsed, int64_t start, int64_t done, double resumed, double partial);

// Seconds left of `total` units at that rate; -1 when there is no rate yet.
double progress_eta(double elapsed, int64_t total, int64_t start, int64_t done, double resumed,
                    double partial);

// "1h02m", "4m05s", "12s".
std::string format_duration(double seconds);

}  // namespace seqlab
