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
  // Prints the final line (called by the destructor if not called before).
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  int64_t total_, start_, done_;
  std::string status_;
  bool tty_, finished_ = false;
  std::chrono::steady_clock::time_point t0_, last_draw_;
};

// Whether stderr is a terminal (progress bars redraw only there).
bool stderr_is_tty();

// "1h02m", "4m05s", "12s".
std::string format_duration(double seconds);

}  // namespace seqlab
