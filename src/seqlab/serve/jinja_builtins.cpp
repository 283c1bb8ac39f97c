// The Jinja subset's built-ins (serve/jinja.h) and value semantics, following Jinja2 and Python:
//
//   filters    trim(chars), length, count, upper, lower, capitalize, string, safe, list, first,
//              last, join(sep), default(value, boolean) / d, tojson(indent)
//   tests      defined, undefined, none, string, number, integer, float, boolean, mapping,
//              sequence, iterable, true, false, even, odd, divisibleby(n), equalto(x) / eq
//   functions  raise_exception(message), namespace(name=value, ...)
//   methods    str: strip lstrip rstrip (chars), upper lower capitalize, startswith endswith,
//              split(sep), replace(old, new); dict: get(key, default), keys, values
//
// upper, lower and capitalize change ASCII letters only; strip without chars strips ASCII
// whitespace. tojson is transformers' (json.dumps, ensure_ascii off, Python's separators), not
// Jinja2's HTML-safe one.
#include "seqlab/serve/jinja_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace seqlab::serve::jinja {

namespace {

const std::set<std::string> kFilters = {"trim",       "length", "count",   "upper", "lower",
                                        "capitalize", "string", "safe",    "list",  "first",
                                        "last",       "join",   "default", "d",     "tojson"};
const std::set<std::string> kTests = {"defined",     "undefined", "none",    "string",  "number",
                                      "integer",     "float",     "boolean", "mapping", "sequence",
                                      "iterable",    "true",      "false",   "even",    "odd",
                                      "divisibleby", "equalto",   "eq"};
const std::set<std::string> kFunctions = {"raise_exception", "namespace"};
const std::set<std::string> kMethods = {"strip",      "lstrip",     "rstrip",   "upper", "lower",
                                        "capitalize", "startswith", "endswith", "split", "replace",
                                        "get",        "keys",       "values"};

bool is_num(const Json& j) {
  return j.is_number() || j.is_boolean();
}
double num(const Json& j) {
  return j.is_boolean() ? (j.get<bool>() ? 1.0 : 0.0) : j.get<double>();
}

void py_repr(const Json& j, std::string& out) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    const char q =
        s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    out += q;
    for (const char c : s) {
      if (c == '\\' || c == q)
        out += '\\', out += c;
      else if (c == '\n')
        out += "\\n";
      else if (c == '\r')
        out += "\\r";
      else if (c == '\t')
        out += "\\t";
      else
        out += c;
    }
    out += q;
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      py_repr(j[i], out);
    }
    out += ']';
  } else if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) out += ", ";
      first = false;
      py_repr(Json(k), out);
      out += ": ";
      py_repr(v, out);
    }
    out += '}';
  } else {
    out += to_str(Value::of(j));
  }
}

void dump_json(const Json& j, int indent, int level, std::string& out) {
  const bool pretty = indent >= 0;
  auto newline = [&](int lv) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(lv), ' ');
  };
  if (j.is_array() || j.is_object()) {
    const bool arr = j.is_array();
    if (j.empty()) {
      out += arr ? "[]" : "{}";
      return;
    }
    out += arr ? '[' : '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += pretty ? "," : ", ";
      first = false;
      if (pretty) newline(level + 1);
      if (!arr) {
        out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
        out += ": ";
      }
      dump_json(*it, indent, level + 1, out);
    }
    if (pretty) newline(level);
    out += arr ? ']' : '}';
    return;
  }
  if (j.is_boolean())
    out += j.get<bool>() ? "true" : "false";
  else if (j.is_null())
    out += "null";
  else
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

const std::string& str_arg(const Call& c, size_t i, const char* what) {
  if (i >= c.args.size() || !c.args[i].json() || !c.args[i].get().is_string())
    fail_line(c.line, fmt::format("{}: argument {} must be a string", what, i + 1));
  return c.args[i].get().get_ref<const std::string&>();
}

void check_arity(const Call& c, size_t lo, size_t hi) {
  if (c.args.size() < lo || c.args.size() > hi)
    fail_line(c.line,
              fmt::format("'{}' takes {} to {} arguments, got {}", c.name, lo, hi, c.args.size()));
}

// A keyword argument by name, else positional argument `pos`, else null.
const Value* arg(const Call& c, const char* name, size_t pos) {
  const size_t n_pos = c.args.size() - c.kw.size();
  for (size_t k = 0; k < c.kw.size(); ++k)
    if (c.kw[k] == name) return &c.args[n_pos + k];
  return pos < n_pos ? &c.args[pos] : nullptr;
}

std::string ascii_case(std::string s, int mode) {  // 0 lower, 1 upper, 2 capitalize
  for (size_t i = 0; i < s.size(); ++i) {
    const bool up = mode == 1 || (mode == 2 && i == 0);
    s[i] = static_cast<char>(up ? std::toupper(static_cast<unsigned char>(s[i]))
                                : std::tolower(static_cast<unsigned char>(s[i])));
  }
  return s;
}

std::string strip(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t b = 0, e = s.size();
  if (left) b = s.find_first_not_of(chars);
  if (b == std::string::npos) return "";
  if (right) e = s.find_last_not_of(chars) + 1;
  return s.substr(b, e - b);
}

const char* kSpace = " \t\n\r\f\v";

std::string strip_call(const std::string& s, const Call& c, bool left, bool right) {
  check_arity(c, 0, 1);
  std::string chars = kSpace;
  if (!c.args.empty() && !(c.args[0].json() && c.args[0].get().is_null()))
    chars = str_arg(c, 0, c.name.c_str());
  return strip(s, chars, left, right);
}

Json split(const std::string& s, const Call& c) {
  check_arity(c, 0, 1);
  Json out = Json::array();
  if (c.args.empty() || (c.args[0].json() && c.args[0].get().is_null())) {
    size_t i = 0;
    while ((i = s.find_first_not_of(kSpace, i)) != std::string::npos) {
      const size_t e = std::min(s.find_first_of(kSpace, i), s.size());
      out.push_back(s.substr(i, e - i));
      i = e;
    }
    return out;
  }
  const std::string& sep = str_arg(c, 0, "split");
  if (sep.empty()) fail_line(c.line, "split: empty separator");
  size_t i = 0, at;
  while ((at = s.find(sep, i)) != std::string::npos) {
    out.push_back(s.substr(i, at - i));
    i = at + sep.size();
  }
  out.push_back(s.substr(i));
  return out;
}

Value first_or_last(const Value& in, const Call& c, bool last) {
  if (in.json() && in.get().is_array()) {
    if (in.get().empty()) return {};
    return in.child(last ? in.get().back() : in.get().front());
  }
  if (in.json() && in.get().is_string()) {
    const auto& s = in.get().get_ref<const std::string&>();
    const auto cp = code_points(s);
    if (cp.size() < 2) return {};
    const size_t k = last ? cp.size() - 2 : 0;
    return Value::of(s.substr(cp[k], cp[k + 1] - cp[k]));
  }
  fail_line(c.line, fmt::format("'{}' needs a list or a string, got {}", c.name, type_name(in)));
}

Json as_list(const Value& in, const Call& c) {
  if (in.json() && in.get().is_array()) return in.get();
  Json out = Json::array();
  if (in.json() && in.get().is_object()) {
    for (const auto& [k, v] : in.get().items()) out.push_back(k);
  } else if (in.json() && in.get().is_string()) {
    const auto& s = in.get().get_ref<const std::string&>();
    const auto cp = code_points(s);
    if (cp.size() > (size_t{1} << 20))
      fail_line(c.line, fmt::format("'{}': a string of {} characters is too long to list", c.name,
                                    cp.size() - 1));
    for (size_t k = 0; k + 1 < cp.size(); ++k) out.push_back(s.substr(cp[k], cp[k + 1] - cp[k]));
  } else if (!in.undefined()) {
    fail_line(c.line, fmt::format("'{}' cannot iterate over {}", c.name, type_name(in)));
  }
  return out;
}

}  // namespace

bool is_filter(const std::string& n) {
  return kFilters.count(n) > 0;
}
bool is_test(const std::string& n) {
  return kTests.count(n) > 0;
}
bool is_function(const std::string& n) {
  return kFunctions.count(n) > 0;
}
bool is_method(const std::string& n) {
  return kMethods.count(n) > 0;
}

void fail_line(int line, const std::string& msg) {
  throw Error(fmt::format("line {}: {}", line, msg));
}

bool truthy(const Value& v) {
  if (v.kind == Value::Kind::ns || v.kind == Value::Kind::loop) return true;
  if (v.undefined()) return false;
  const Json& j = v.get();
  if (j.is_null()) return false;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number()) return j.get<double>() != 0;
  if (j.is_string()) return !j.get_ref<const std::string&>().empty();
  return !j.empty();  // lists, dicts
}

std::string to_str(const Value& v) {
  if (v.undefined()) return "";
  if (v.kind == Value::Kind::ns) return "<Namespace>";
  if (v.kind == Value::Kind::loop) return "<LoopContext>";
  const Json& j = v.get();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_null()) return "None";
  if (j.is_number()) return j.dump();
  std::string out;
  py_repr(j, out);
  return out;
}

std::string type_name(const Value& v) {
  if (v.undefined()) return "undefined";
  if (v.kind == Value::Kind::ns) return "a namespace";
  if (v.kind == Value::Kind::loop) return "a loop";
  const Json& j = v.get();
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "none";
  if (j.is_number()) return "a number";
  if (j.is_array()) return "a list";
  return "a dict";
}

bool equal(const Value& a, const Value& b) {
  if (a.undefined() || b.undefined()) return a.undefined() && b.undefined();
  if (a.kind == Value::Kind::ns || b.kind == Value::Kind::ns) return a.ns == b.ns;
  if (a.kind == Value::Kind::loop || b.kind == Value::Kind::loop) return false;
  const Json &x = a.get(), &y = b.get();
  if (is_num(x) && is_num(y)) {
    if (x.is_number_integer() && y.is_number_integer()) return x == y;
    return num(x) == num(y);
  }
  return x == y;
}

bool less(const Value& a, const Value& b, int line) {
  if (a.json() && b.json()) {
    const Json &x = a.get(), &y = b.get();
    if (is_num(x) && is_num(y)) {
      if (x.is_number_integer() && y.is_number_integer())
        return x.get<int64_t>() < y.get<int64_t>();
      return num(x) < num(y);
    }
    if (x.is_string() && y.is_string())
      return x.get_ref<const std::string&>() < y.get_ref<const std::string&>();
  }
  fail_line(line, fmt::format("cannot compare {} with {}", type_name(a), type_name(b)));
}

std::vector<size_t> code_points(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  out.push_back(s.size());
  return out;
}

std::string to_json(const Json& v, int indent) {
  std::string out;
  dump_json(v, indent, 0, out);
  return out;
}

Value apply_filter(const Value& in, const Call& c, const RenderLimits& lim) {
  const std::string& f = c.name;
  if (f == "default" || f == "d") {
    check_arity(c, 0, 2);
    const Value* boolean = arg(c, "boolean", 1);
    const bool use = in.undefined() || (boolean && truthy(*boolean) && !truthy(in));
    if (!use) return in;
    const Value* def = arg(c, "default_value", 0);
    return def ? *def : Value::of("");
  }
  if (f == "length" || f == "count") {
    check_arity(c, 0, 0);
    if (in.undefined()) return Value::of(0);
    if (in.json() && in.get().is_string())
      return Value::of(static_cast<int64_t>(code_points(in.get().get<std::string>()).size() - 1));
    if (in.json() && (in.get().is_array() || in.get().is_object()))
      return Value::of(static_cast<int64_t>(in.get().size()));
    fail_line(c.line, fmt::format("'{}' of {}", f, type_name(in)));
  }
  if (f == "tojson") {
    check_arity(c, 0, 1);
    if (!in.json()) fail_line(c.line, fmt::format("tojson of {}", type_name(in)));
    const Value* ind = arg(c, "indent", 0);
    int indent = -1;
    if (ind && !(ind->json() && ind->get().is_null())) {
      if (!ind->json() || !ind->get().is_number_integer() || ind->get().get<int64_t>() < 0 ||
          ind->get().get<int64_t>() > 16)
        fail_line(c.line, "tojson: indent must be an integer in [0, 16]");
      indent = static_cast<int>(ind->get().get<int64_t>());
    }
    std::string s = to_json(in.get(), indent);
    if (s.size() > lim.max_output_bytes) fail_line(c.line, "tojson: the result is too large");
    return Value::of(std::move(s));
  }
  if (f == "first" || f == "last") return check_arity(c, 0, 0), first_or_last(in, c, f == "last");
  if (f == "list") return check_arity(c, 0, 0), Value::of(as_list(in, c));
  if (f == "join") {
    check_arity(c, 0, 1);
    const Value* sep = arg(c, "d", 0);
    const std::string d = sep ? to_str(*sep) : "";
    std::string out;
    const Json items = as_list(in, c);
    for (size_t k = 0; k < items.size(); ++k) {
      if (k) out += d;
      out += to_str(Value::of(items[k]));
      if (out.size() > lim.max_output_bytes) fail_line(c.line, "join: the result is too large");
    }
    return Value::of(std::move(out));
  }
  const std::string s = to_str(in);
  if (f == "trim") return Value::of(strip_call(s, c, true, true));
  check_arity(c, 0, 0);
  if (f == "upper") return Value::of(ascii_case(s, 1));
  if (f == "lower") return Value::of(ascii_case(s, 0));
  if (f == "capitalize") return Value::of(ascii_case(s, 2));
  return Value::of(s);  // string, safe
}

bool apply_test(const Value& in, const Call& c) {
  const std::string& t = c.name;
  const bool one_arg = t == "divisibleby" || t == "equalto" || t == "eq";
  check_arity(c, one_arg ? 1 : 0, one_arg ? 1 : 0);
  if (t == "defined") return !in.undefined();
  if (t == "undefined") return in.undefined();
  if (t == "equalto" || t == "eq") return equal(in, c.args[0]);
  if (!in.json()) return false;  // undefined or a namespace
  const Json& j = in.get();
  if (t == "none") return j.is_null();
  if (t == "string") return j.is_string();
  if (t == "number") return is_num(j);
  if (t == "integer") return j.is_number_integer();
  if (t == "float") return j.is_number_float();
  if (t == "boolean") return j.is_boolean();
  if (t == "mapping") return j.is_object();
  if (t == "sequence" || t == "iterable") return j.is_string() || j.is_array() || j.is_object();
  if (t == "true") return j.is_boolean() && j.get<bool>();
  if (t == "false") return j.is_boolean() && !j.get<bool>();
  if (!j.is_number_integer())
    fail_line(c.line, fmt::format("the test '{}' needs an integer, got {}", t, type_name(in)));
  const int64_t x = j.get<int64_t>();
  if (t == "even") return x % 2 == 0;
  if (t == "odd") return x % 2 != 0;
  const Value& d = c.args[0];  // divisibleby
  if (!d.json() || !d.get().is_number_integer() || d.get().get<int64_t>() == 0)
    fail_line(c.line, "divisibleby needs a non-zero integer");
  const int64_t k = d.get().get<int64_t>();
  return k == -1 || x % k == 0;  // (INT64_MIN % -1 overflows)
}

Value call_method(const Value& self, const Call& c, const RenderLimits& lim) {
  const std::string& m = c.name;
  if (self.json() && self.get().is_object()) {
    const Json& o = self.get();
    if (m == "get") {
      check_arity(c, 1, 2);
      const std::string& key = str_arg(c, 0, "get");
      if (o.contains(key)) return self.child(o.at(key));
      return c.args.size() > 1 ? c.args[1] : Value::of(nullptr);
    }
    if (m == "keys" || m == "values") {
      check_arity(c, 0, 0);
      Json out = Json::array();
      for (const auto& [k, v] : o.items()) out.push_back(m == "keys" ? Json(k) : v);
      return Value::of(std::move(out));
    }
  }
  if (!self.json() || !self.get().is_string() || m == "get" || m == "keys" || m == "values")
    fail_line(c.line, fmt::format("{} has no method '{}'", type_name(self), m));
  const std::string& s = self.get().get_ref<const std::string&>();
  if (m == "strip") return Value::of(strip_call(s, c, true, true));
  if (m == "lstrip") return Value::of(strip_call(s, c, true, false));
  if (m == "rstrip") return Value::of(strip_call(s, c, false, true));
  if (m == "split") return Value::of(split(s, c));
  if (m == "startswith" || m == "endswith") {
    check_arity(c, 1, 1);
    const std::string& p = str_arg(c, 0, m.c_str());
    const bool ok = p.size() <= s.size() &&
                    (m == "startswith" ? s.compare(0, p.size(), p) == 0
                                       : s.compare(s.size() - p.size(), p.size(), p) == 0);
    return Value::of(ok);
  }
  if (m == "replace") {
    check_arity(c, 2, 2);
    const std::string &from = str_arg(c, 0, "replace"), &to = str_arg(c, 1, "replace");
    if (from.empty()) fail_line(c.line, "replace: an empty pattern is not supported");
    std::string out;
    size_t i = 0, at;
    while ((at = s.find(from, i)) != std::string::npos) {
      out.append(s, i, at - i);
      out += to;
      i = at + from.size();
      if (out.size() > lim.max_output_bytes) fail_line(c.line, "replace: the result is too large");
    }
    out.append(s, i, std::string::npos);
    return Value::of(std::move(out));
  }
  check_arity(c, 0, 0);
  if (m == "upper") return Value::of(ascii_case(s, 1));
  if (m == "lower") return Value::of(ascii_case(s, 0));
  return Value::of(ascii_case(s, 2));  // capitalize
}

Value call_function(const Call& c) {
  if (c.name == "raise_exception") {
    check_arity(c, 1, 1);
    throw Error(to_str(c.args[0]), true);
  }
  // namespace(a=1, b=2): keyword arguments only.
  if (c.kw.size() != c.args.size()) fail_line(c.line, "namespace() takes keyword arguments only");
  Value v;
  v.kind = Value::Kind::ns;
  v.ns = std::make_shared<std::map<std::string, Value>>();
  for (size_t k = 0; k < c.kw.size(); ++k) (*v.ns)[c.kw[k]] = c.args[k];
  return v;
}

}  // namespace seqlab::serve::jinja
