// The Jinja subset's values and built-ins (serve/jinja.h), shared by the parser (which checks
// names), the evaluator (jinja_eval.cpp) and the built-ins (jinja_builtins.cpp).
#pragma once

#include "seqlab/serve/jinja.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace seqlab::serve::jinja {

// A value: undefined (a missing variable, key or attribute, as Jinja2's default Undefined), an
// immutable JSON value, a namespace() (the one mutable kind), or a for loop's `loop` (index0 and
// length; its attributes are computed when read). JSON values are shared, never copied: an
// element of a list points into its parent, which it keeps alive.
struct Value {
  enum class Kind { undefined, json, ns, loop };
  Kind kind = Kind::undefined;
  std::shared_ptr<const Json> j;
  std::shared_ptr<std::map<std::string, Value>> ns;
  int64_t index0 = 0, length = 0;  // loop

  static Value loop(int64_t index0, int64_t length) {
    Value v;
    v.kind = Kind::loop;
    v.index0 = index0;
    v.length = length;
    return v;
  }

  static Value of(Json x) {
    Value v;
    v.kind = Kind::json;
    v.j = std::make_shared<const Json>(std::move(x));
    return v;
  }
  // A part of this value (an element or a field), sharing its storage.
  Value child(const Json& part) const {
    Value v;
    v.kind = Kind::json;
    v.j = std::shared_ptr<const Json>(j, &part);
    return v;
  }
  bool undefined() const { return kind == Kind::undefined; }
  bool json() const { return kind == Kind::json; }
  const Json& get() const { return *j; }
};

// Names the parser accepts.
bool is_filter(const std::string& name);
bool is_test(const std::string& name);
bool is_function(const std::string& name);
bool is_method(const std::string& name);

// "line N: msg" as a jinja::Error.
[[noreturn]] void fail_line(int line, const std::string& msg);

bool truthy(const Value& v);
// What {{ v }} prints: strings as they are, True/False/None, numbers as Python prints them,
// lists and dicts as Python's repr, undefined as "".
std::string to_str(const Value& v);
std::string type_name(const Value& v);
bool equal(const Value& a, const Value& b);
// a < b for numbers and strings (a jinja::Error for other kinds).
bool less(const Value& a, const Value& b, int line);

// The UTF-8 code points of s (Python indexes strings by them), as byte offsets plus s.size().
std::vector<size_t> code_points(const std::string& s);
// json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none), as transformers' tojson.
std::string to_json(const Json& v, int indent);

struct Call {
  const std::string& name;
  const std::vector<Value>& args;      // positional then keyword values
  const std::vector<std::string>& kw;  // names of the last kw.size() args
  int line;
};
Value apply_filter(const Value& in, const Call& c, const RenderLimits& lim);
bool apply_test(const Value& in, const Call& c);
Value call_method(const Value& self, const Call& c, const RenderLimits& lim);
// raise_exception and namespace.
Value call_function(const Call& c);

}  // namespace seqlab::serve::jinja
