#include "seqlab/core/progress.h"

#include "seqlab/core/log.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace seqlab {

bool stderr_is_tty() {
  return isatty(fileno(stderr)) != 0;
}

std::string format_duration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

Progress::Progress(std::string label, int64_t total, int64_t start)
    : label_(std::move(label)), total_(total), start_(start), done_(start), tty_(stderr_is_tty()) {
  t0_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (!finished_) finish();
}

double progress_rate(double elapsed, int64_t start, int64_t done, double resumed, double partial) {
  const double progressed = static_cast<double>(done - start) + partial - resumed;
  return elapsed > 0 && progressed > 0 ? progressed / elapsed : 0.0;
}

double progress_eta(double elapsed, int64_t total, int64_t start, int64_t done, double resumed,
                    double partial) {
  const double rate = progress_rate(elapsed, start, done, resumed, partial);
  if (!(rate > 0)) return -1;
  return std::max(0.0, static_cast<double>(total - done) - partial) / rate;
}

void Progress::update(int64_t done, double partial, double resumed, const std::string& status) {
  partial_ = partial;
  resumed_ = resumed;
  update(done, status);
}

void Progress::update(int64_t done, const std::string& status) {
  done_ = done;
  status_ = status;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  // Redraw a terminal at most 10 times a second; a log every 10 seconds.
  if (since >= (tty_ ? 0.1 : 10.0)) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void Progress::draw(bool final) {
  if (log_level() < 1) return;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double rate = progress_rate(el, start_, done_, resumed_, partial_);
  const double eta = progress_eta(el, total_, start_, done_, resumed_, partial_);
  // Slow units (suite cells) read better as time per unit.
  std::string speed = fmt::format("{:.1f} it/s", rate);
  if (rate > 0 && rate < 1)
    speed =
        1 / rate < 60 ? fmt::format("{:.1f} s/it", 1 / rate) : format_duration(1 / rate) + "/it";
  std::string line;
  if (tty_) {
    const int width = 24;
    const int fill = total_ > 0 ? static_cast<int>(width * done_ / total_) : 0;
    line = fmt::format("\r{}  [{}{}]  {}/{}  {}  {} {}  {}\x1b[K", label_, std::string(fill, '#'),
                       std::string(width - fill, '.'), done_, total_, speed, final ? "took" : "eta",
                       format_duration(final ? el : eta), status_);
    if (final) line += "\n";
  } else {
    line = fmt::format("{}  {}/{}  {}  {} {}  {}\n", label_, done_, total_, speed,
                       final ? "took" : "eta", format_duration(final ? el : eta), status_);
  }
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace seqlab
