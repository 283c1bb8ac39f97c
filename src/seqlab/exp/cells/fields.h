// Field lists for experiment cells and their result rows, on the pattern of core/fields.h: a cell
// kind's config struct and its result row each declare their fields once, in visit(), and the
// visitors below read and write them.
//
//   template <class V> void visit(V&& v) {
//     v(model, "model", kRequired, "the model to train");       // a nested config, must be given
//     v(eval_size, "eval_size", int64_t{256}, "test sequences"); // a scalar with its default
//     v(ppl_converted, "ppl_converted", kUnset, "...");          // std::optional: may be absent
//   }
//
// Beyond core/fields.h's scalars a field may be
//   - a nested config: a type with a strict `static T from_json(json, source)` (ModelConfig,
//     TaskConfig, TrainConfig, ...), read through it, or a struct with its own visit()
//     (ConvertConfig, the cells' small sections), read field by field;
//   - std::optional<T>: a key that may be absent, written only when set;
//   - any type nlohmann converts (vectors, maps, nlohmann::json).
// Keys are JSON keys as they appear in cell specs and results.jsonl (`json_key` leaves them alone).
//
// Specs are read strictly (read_spec: unknown keys and missing kRequired fields are errors naming
// the cell); result rows leniently (read_row: a row written before a field existed keeps the
// field's default, other keys are left to the caller), since reports read results.jsonl files of
// every age.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/core/fields.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace seqlab {

// The default of a field that a cell spec must give.
struct Required {};
inline constexpr Required kRequired{};
// The default of a std::optional field: absent.
inline constexpr std::nullopt_t kUnset = std::nullopt;

namespace cell_fields {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

struct AnyVisitor {
  template <class... A>
  void operator()(A&&...) {}
};

// A config that reads itself (strictly, validating): `static T from_json(json, source)`.
template <class T, class = void>
struct reads_itself : std::false_type {};
template <class T>
struct reads_itself<T, std::void_t<decltype(T::from_json(std::declval<const nlohmann::json&>(),
                                                         std::declval<const std::string&>()))>>
    : std::true_type {};

// A config that writes itself: `json to_json() const`.
template <class T, class = void>
struct writes_itself : std::false_type {};
template <class T>
struct writes_itself<T, std::void_t<decltype(std::declval<const T&>().to_json())>>
    : std::true_type {};

// A struct with a field list.
template <class T, class = void>
struct has_visit : std::false_type {};
template <class T>
struct has_visit<T, std::void_t<decltype(std::declval<T&>().visit(std::declval<AnyVisitor&>()))>>
    : std::true_type {};

}  // namespace cell_fields

template <class T>
void read_fields(const nlohmann::json& j, T& out, const std::string& source, bool strict);

// Reads the value under `key` of object `j` (present) into `out`.
template <class T>
void read_value(const nlohmann::json& j, const std::string& key, T& out, const std::string& source,
                bool strict) {
  const auto& v = j.at(key);
  if constexpr (cell_fields::reads_itself<T>::value) {
    out = T::from_json(v, source);
  } else if constexpr (cell_fields::has_visit<T>::value) {
    read_fields(v, out, source, strict);
  } else {
    // Scalars, vectors, maps. Integers are checked as core/fields.h does (nlohmann would turn
    // 2.7 into 2 and -1 into 2^64 - 1), except that a non-negative signed integer fits an
    // unsigned field: JSON built in C++ ({"seed", 3}) holds 3 as signed.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!v.is_number_integer())
        fail("{}: field '{}' must be an integer, got {}", source, key, json_for_message(v));
      if constexpr (std::is_unsigned_v<T>)
        if (!v.is_number_unsigned() && v.template get<int64_t>() < 0)
          fail("{}: field '{}' must be >= 0, got {}", source, key, json_for_message(v));
    }
    try {
      out = v.template get<T>();
    } catch (const nlohmann::json::exception&) {
      fail("{}: field '{}' has the wrong type ({})", source, key, v.type_name());
    }
  }
}

// Reads a field list from a JSON object. strict: unknown keys and missing kRequired fields are
// errors naming `source`.
struct FieldReader {
  const nlohmann::json& j;
  const std::string& source;
  bool strict = true;
  std::set<std::string> known;

  template <class T, class D>
  void operator()(T& field, const char* flag, const D&, const char*) {
    const std::string key = json_key(flag);  // core's field lists name flags: d-feature
    known.insert(key);
    if (!j.contains(key)) {
      if constexpr (std::is_same_v<D, Required>)
        if (strict) fail("{}: missing field '{}'", source, key);
      return;
    }
    if constexpr (cell_fields::is_optional<T>::value) {
      typename T::value_type v{};
      read_value(j, key, v, source, strict);
      field = std::move(v);
    } else {
      read_value(j, key, field, source, strict);
    }
  }
};

// Writes a field list into a JSON object; an unset std::optional writes nothing.
struct FieldWriter {
  nlohmann::json& j;

  template <class T>
  static nlohmann::json value_json(const T& field);

  template <class T, class D>
  void operator()(const T& field, const char* flag, const D&, const char*) {
    const std::string key = json_key(flag);
    if constexpr (cell_fields::is_optional<T>::value) {
      if (field) j[key] = value_json(*field);
    } else {
      j[key] = value_json(field);
    }
  }
};

// Sets every field to its default (kRequired fields keep their default-constructed value).
struct FieldDefaults {
  template <class T, class D>
  void operator()(T& field, const char*, const D& def, const char*) {
    if constexpr (!std::is_same_v<D, Required>) field = T(def);
  }
};

template <class T>
void read_fields(const nlohmann::json& j, T& out, const std::string& source, bool strict) {
  SEQLAB_CHECK(j.is_object(), "{}: expected a JSON object, got {}", source, json_for_message(j));
  FieldReader r{j, source, strict, {}};
  out.visit(r);
  if (strict)
    for (auto it = j.begin(); it != j.end(); ++it)
      SEQLAB_CHECK(r.known.count(it.key()), "{}: unknown field '{}'", source, it.key());
}

template <class T>
nlohmann::json write_fields(const T& x) {
  nlohmann::json j = nlohmann::json::object();
  FieldWriter w{j};
  const_cast<T&>(x).visit(w);  // visit() takes fields by reference; the writer only reads them
  return j;
}

template <class T>
nlohmann::json FieldWriter::value_json(const T& field) {
  if constexpr (cell_fields::writes_itself<T>::value)
    return field.to_json();
  else if constexpr (cell_fields::has_visit<T>::value)
    return write_fields(field);
  else
    return field;
}

// How messages name a cell spec: its id.
inline std::string cell_source(const nlohmann::json& cell) {
  auto it = cell.find("id");
  return it != cell.end() && it->is_string() ? it->get<std::string>() : std::string("cell");
}

// What every cell spec has; each kind's config derives from it and visits it first.
struct CellSpec {
  std::string id;
  std::string kind;                // exp/cells/kinds.h; none for a plain cell
  std::vector<std::string> after;  // cells that must finish first (exp/suite.h)

  template <class V>
  void visit(V&& v) {
    v(id, "id", kRequired, "unique in the suite");
    v(kind, "kind", std::string(), "the cell kind; none for a plain grid cell");
    v(after, "after", std::vector<std::string>{}, "cells that must finish first");
  }
};

// A cell spec of kind T, read strictly: `T::visit` lists every key the spec may have.
template <class T>
T read_spec(const nlohmann::json& cell, const std::string& source) {
  T c;
  read_fields(cell, c, source, /*strict=*/true);
  return c;
}

// A result row of type T, read leniently: missing keys keep T's defaults, unknown ones are ignored.
template <class T>
T read_row(const nlohmann::json& row) {
  T r;
  read_fields(row, r, "result row", /*strict=*/false);
  return r;
}

// The rows of `rows` whose "kind" is `kind`, typed.
template <class T>
std::vector<T> read_rows_of_kind(const std::vector<nlohmann::json>& rows, const std::string& kind) {
  std::vector<T> out;
  for (const auto& r : rows)
    if (r.value("kind", "") == kind) out.push_back(read_row<T>(r));
  return out;
}

}  // namespace seqlab
