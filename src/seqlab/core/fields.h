// One field list drives everything a config does.
//
// A config struct declares its fields once, in a visit() method:
//
//   template <class V> void visit(V&& v) {
//     v(d_model, "d-model", int64_t{64}, "width of the residual stream");
//   }
//
// and the visitors below derive from that single list: default values, JSON writing, strict JSON
// reading (unknown keys are errors), and (in tools/) CLI flags with --help text. Adding an option
// is one line. JSON keys are the flag names with '-' replaced by '_'.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <type_traits>

namespace seqlab {

inline std::string json_key(const char* flag) {
  std::string k(flag);
  for (auto& c : k)
    if (c == '-') c = '_';
  return k;
}

// Sets every field to its default.
struct DefaultsVisitor {
  template <class T, class D>
  void operator()(T& field, const char*, const D& def, const char*) {
    field = static_cast<T>(def);
  }
};

// Writes every field into a JSON object.
struct ToJsonVisitor {
  nlohmann::json& j;
  template <class T, class D>
  void operator()(const T& field, const char* flag, const D&, const char*) {
    j[json_key(flag)] = field;
  }
};

// Reads fields from a JSON object. Missing keys keep their current value (so old files load with
// new defaults); keys of the wrong type are errors naming the key. Records which keys it knows so
// that the caller can reject the unknown ones.
struct FromJsonVisitor {
  const nlohmann::json& j;
  const std::string& source;  // file name, for messages
  std::set<std::string> known;
  template <class T, class D>
  void operator()(T& field, const char* flag, const D&, const char*) {
    const std::string key = json_key(flag);
    known.insert(key);
    auto it = j.find(key);
    if (it == j.end()) return;
    // nlohmann converts 2.7 to 2 and -1 to 2^64 - 1 without a word; a config file must not.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!it->is_number_integer())
        fail("{}: field '{}' must be an integer, got {}", source, key, json_for_message(*it));
      // A parsed file stores every non-negative integer as unsigned, but JSON built in C++
      // ({"seed", 3}) stores it as signed: only a negative value is refused.
      if constexpr (std::is_unsigned_v<T>)
        if (!it->is_number_unsigned() && it->template get<int64_t>() < 0)
          fail("{}: field '{}' must be >= 0, got {}", source, key, json_for_message(*it));
    }
    try {
      field = it->template get<T>();
    } catch (const nlohmann::json::exception&) {
      fail("{}: field '{}' has the wrong type ({})", source, key, it->type_name());
    }
  }
};

}  // namespace seqlab
