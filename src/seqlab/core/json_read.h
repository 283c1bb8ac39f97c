// Reading JSON from files that may be hostile: depth-limited parsing and bounded error messages.
//
// nlohmann::json parses without recursion, but copying, comparing and dumping a value recurse
// once per nesting level, so a file of a million '[' (2 MB) would overflow the stack the first
// time the parsed value is copied or quoted in a message. Every file format seqlab reads nests a
// few levels at most; parse_json refuses more than kMaxJsonDepth while parsing, before any of
// that can happen.
#pragma once

#include "seqlab/core/error.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace seqlab {

inline constexpr int kMaxJsonDepth = 64;

// nlohmann::json::parse(text) that throws seqlab::Error "<source>: JSON nested deeper than 64
// levels" as soon as the parser opens a 65th array or object. Syntax errors still throw
// nlohmann::json::exception, for the caller's message.
inline nlohmann::json parse_json(std::string_view text, const std::string& source) {
  int depth = 0;
  auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      SEQLAB_CHECK(++depth <= kMaxJsonDepth, "{}: JSON nested deeper than {} levels", source,
                   kMaxJsonDepth);
    } else if (event == E::object_end || event == E::array_end) {
      --depth;
    }
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), on_event);
}

// A JSON value for an error message: a scalar as written (cut to 60 characters), an array or
// object by its type only, so the message stays one short line whatever the file holds.
inline std::string json_for_message(const nlohmann::json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() <= 60 ? s : s.substr(0, 60) + "...";
}

}  // namespace seqlab
