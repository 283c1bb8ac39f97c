// seqlab::Error and SEQLAB_CHECK: the one way the library reports bad input or broken invariants.
//
// The library never calls exit or abort and never uses assert on user input (assert vanishes under
// NDEBUG). It throws seqlab::Error with a one-line message; the CLI's main catches it, prints
// "error: <message>" on stderr and returns exit code 2.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace seqlab {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws seqlab::Error with a message formatted by fmt.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace seqlab

// SEQLAB_CHECK(cond, "message with {}", value): throws seqlab::Error when cond is false.
#define SEQLAB_CHECK(cond, ...)               \
  do {                                        \
    if (!(cond)) ::seqlab::fail(__VA_ARGS__); \
  } while (0)
