// CLI11 flags from a config's field list (see src/seqlab/core/fields.h): one line per option in
// the config struct gives its flag, default and --help text here.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <type_traits>
#include <string>

namespace seqlab::cli {

struct AddFlagsVisitor {
  CLI::App* app;
  std::string group;
  std::set<std::string> skip;  // fields the command sets itself (e.g. vocab size from the task)
  template <class T, class D>
  void operator()(T& field, const char* flag, const D&, const char* help) {
    if (skip.count(flag)) return;
    auto* opt =
        app->add_option(std::string("--") + flag, field, help)->capture_default_str()->group(group);
    // CLI11 would wrap "-1" into 2^64 - 1 for an unsigned field.
    if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
      opt->check(CLI::NonNegativeNumber);
    // A yes/no field is a flag that may also take a value: `--deq`, `--deq true`, `--deq=false`.
    // expected(0) first marks the option flag-like, so a bare flag reads true, not its default.
    if constexpr (std::is_same_v<T, bool>) opt->expected(0)->expected(0, 1);
  }
};

}  // namespace seqlab::cli
