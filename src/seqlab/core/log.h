// Logging to stderr. Nothing below exp/ prints to stdout: stdout belongs to the CLI's results.
#pragma once

#include <fmt/format.h>

#include <cstdio>

namespace seqlab {

// Verbosity: 0 = quiet, 1 = info (default), 2 = debug.
int& log_level();

template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= 1) fmt::print(stderr, "{}\n", fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= 2) fmt::print(stderr, "{}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace seqlab
