// The Jinja subset's evaluator (serve/jinja.h): walks jinja_ast.h's tree with Python's semantics
// for operators (and/or return an operand; // and % floor; + adds numbers and joins strings or
// lists), Jinja2's for undefined values (prints as "", false, iterates as empty; an attribute or
// an operator on it is an error), and Jinja2's scoping: a {% for %} body is a scope of its own
// (a set inside it is gone after the loop; namespace() attributes are how a template carries a
// value out), and each iteration starts afresh from the enclosing values; {% if %} is not a scope.
#include "seqlab/serve/jinja_ast.h"
#include "seqlab/serve/jinja_value.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace seqlab::serve::jinja {

namespace {

class Renderer {
 public:
  explicit Renderer(const RenderLimits& lim) : lim_(lim) {}

  std::string run(const Program& p, const Json& vars) {
    if (!vars.is_object()) throw Error("the template's variables must be an object");
    scopes_.emplace_back();
    for (const auto& [k, v] : vars.items()) scopes_.back()[k] = Value::of(v);
    exec(p.body);
    return std::move(out_);
  }

 private:
  void step(int line) {
    if (++steps_ > lim_.max_steps)
      fail_line(line, fmt::format("the template ran past its budget of {} steps", lim_.max_steps));
  }
  // Work proportional to data: one step per 64 bytes read or written (8 per list element).
  void charge(size_t bytes, int line) {
    steps_ += static_cast<int64_t>(bytes / 64);
    step(line);
  }
  static size_t weight(const Value& v) {
    if (!v.json()) return 0;
    const Json& j = v.get();
    if (j.is_string()) return j.get_ref<const std::string&>().size();
    return j.is_array() || j.is_object() ? 8 * j.size() : 0;
  }
  void check_size(size_t n, int line) const {
    if (n > lim_.max_output_bytes)
      fail_line(line, fmt::format("the output would pass {} bytes", lim_.max_output_bytes));
  }

  void exec(const std::vector<Stmt>& body) {
    for (const auto& s : body) {
      step(s.line);
      switch (s.k) {
        case Stmt::K::text:
          emit(s.text, s.line);
          break;
        case Stmt::K::output:
          emit(to_str(eval(*s.expr)), s.line);
          break;
        case Stmt::K::if_:
          for (const auto& [cond, branch] : s.branches) {
            if (!cond || truthy(eval(*cond))) {
              exec(branch);
              break;
            }
          }
          break;
        case Stmt::K::for_:
          loop(s);
          break;
        case Stmt::K::set:
          set(s);
          break;
      }
    }
  }

  void emit(const std::string& s, int line) {
    charge(s.size(), line);
    check_size(out_.size() + s.size(), line);
    out_ += s;
  }

  void loop(const Stmt& s) {
    const Value seq = eval(*s.expr);
    charge(weight(seq), s.line);
    std::vector<Value> items;
    if (seq.json() && seq.get().is_array()) {
      for (const auto& e : seq.get()) items.push_back(seq.child(e));
    } else if (seq.json() && (seq.get().is_object() || seq.get().is_string())) {
      const std::string list = "list";
      const std::vector<Value> no_args;
      const std::vector<std::string> no_kw;
      const Value all = apply_filter(seq, Call{list, no_args, no_kw, s.line}, lim_);
      for (const auto& e : all.get()) items.push_back(all.child(e));
    } else if (!seq.undefined()) {
      fail_line(s.line, fmt::format("cannot iterate over {}", type_name(seq)));
    }
    if (items.empty()) return exec(s.else_body);
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(s.line);
      // Each iteration starts from the enclosing scope's values, as Jinja2's loop frames do: a
      // counter set in the body does not carry over to the next iteration.
      scopes_.emplace_back();
      auto& scope = scopes_.back();
      scope[s.var] = items[static_cast<size_t>(i)];
      scope["loop"] = Value::loop(i, n);
      exec(s.body);
      scopes_.pop_back();
    }
  }

  void set(const Stmt& s) {
    Value v = eval(*s.expr);
    if (s.attr.empty()) {
      scopes_.back()[s.var] = std::move(v);
      return;
    }
    Value target = lookup(s.var);
    if (target.kind != Value::Kind::ns)
      fail_line(s.line, fmt::format("'{}' is {}, not a namespace: cannot set '{}.{}'", s.var,
                                    type_name(target), s.var, s.attr));
    (*target.ns)[s.attr] = std::move(v);
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return {};
  }

  Value eval(const Expr& e) {
    step(e.line);
    switch (e.k) {
      case Expr::K::literal: {
        Value v;
        v.kind = Value::Kind::json;
        v.j = e.lit;
        return v;
      }
      case Expr::K::name:
        return lookup(e.name);
      case Expr::K::list:
      case Expr::K::dict:
        return collection(e);
      case Expr::K::attr:
        return member(eval(*e.a[0]), Value::of(e.name), e.line, true);
      case Expr::K::subscript:
        return member(eval(*e.a[0]), eval(*e.a[1]), e.line, false);
      case Expr::K::slice:
        return slice(e);
      case Expr::K::unary:
        return unary(e);
      case Expr::K::binary:
        return binary(e);
      case Expr::K::cond:
        if (truthy(eval(*e.a[1]))) return eval(*e.a[0]);
        return e.a[2] ? eval(*e.a[2]) : Value{};
      case Expr::K::filter:
      case Expr::K::test:
      case Expr::K::method:
      case Expr::K::call:
        return call(e);
    }
    return {};
  }

  Value collection(const Expr& e) {
    Json out = e.k == Expr::K::list ? Json::array() : Json::object();
    for (size_t i = 0; i < e.a.size(); ++i) {
      const Value v = eval(*e.a[i]);
      if (!v.json()) fail_line(e.line, fmt::format("a literal cannot hold {}", type_name(v)));
      if (e.k == Expr::K::list) {
        out.push_back(v.get());
      } else {
        const Value val = eval(*e.a[++i]);
        if (!v.get().is_string() || !val.json())
          fail_line(e.line, "a dict literal needs string keys and defined values");
        out[v.get().get<std::string>()] = val.get();
      }
    }
    return Value::of(std::move(out));
  }

  // obj.name (attr) or obj[key]; a missing one is undefined, as in Jinja2.
  Value member(const Value& obj, const Value& key, int line, bool attr) {
    if (obj.undefined())
      fail_line(line, fmt::format("cannot read {} of an undefined value",
                                  attr ? "'." + key.get().get<std::string>() + "'" : "an item"));
    if (obj.kind == Value::Kind::loop) return loop_attr(obj, key);
    if (obj.kind == Value::Kind::ns) {
      if (!key.json() || !key.get().is_string()) return {};
      const auto f = obj.ns->find(key.get().get<std::string>());
      return f == obj.ns->end() ? Value{} : f->second;
    }
    const Json& o = obj.get();
    if (o.is_string()) charge(weight(obj), line);
    if (!key.json()) return {};
    const Json& k = key.get();
    if (o.is_object() && k.is_string()) {
      const auto f = o.find(k.get<std::string>());
      return f == o.end() ? Value{} : obj.child(*f);
    }
    if ((o.is_array() || o.is_string()) && k.is_number_integer()) {
      const bool arr = o.is_array();
      const std::vector<size_t> cp =
          arr ? std::vector<size_t>{} : code_points(o.get<std::string>());
      const auto n = static_cast<int64_t>(arr ? o.size() : cp.size() - 1);
      int64_t i = k.get<int64_t>();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return {};
      const auto u = static_cast<size_t>(i);
      if (arr) return obj.child(o[u]);
      return Value::of(o.get<std::string>().substr(cp[u], cp[u + 1] - cp[u]));
    }
    return {};
  }

  // loop.index0, index, revindex0, revindex, first, last, length; anything else is undefined.
  static Value loop_attr(const Value& loop, const Value& key) {
    if (!key.json() || !key.get().is_string()) return {};
    const std::string& k = key.get().get_ref<const std::string&>();
    const int64_t i = loop.index0, n = loop.length;
    if (k == "index0") return Value::of(i);
    if (k == "index") return Value::of(i + 1);
    if (k == "revindex0") return Value::of(n - 1 - i);
    if (k == "revindex") return Value::of(n - i);
    if (k == "first") return Value::of(i == 0);
    if (k == "last") return Value::of(i == n - 1);
    if (k == "length") return Value::of(n);
    return {};
  }

  // obj[a:b:c] with Python's slice rules, on lists and strings.
  Value slice(const Expr& e) {
    const Value obj = eval(*e.a[0]);
    int64_t bound[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.a[k + 1]) continue;
      const Value v = eval(*e.a[k + 1]);
      if (v.json() && v.get().is_null()) continue;
      if (!v.json() || !v.get().is_number_integer())
        fail_line(e.line, "slice bounds must be integers");
      bound[k] = v.get().get<int64_t>();
      given[k] = true;
    }
    charge(weight(obj), e.line);
    const int64_t stride = bound[2];
    if (stride == 0) fail_line(e.line, "slice step cannot be zero");
    const bool arr = obj.json() && obj.get().is_array();
    if (!arr && !(obj.json() && obj.get().is_string()))
      fail_line(e.line, fmt::format("cannot slice {}", type_name(obj)));
    const std::vector<size_t> cp =
        arr ? std::vector<size_t>{} : code_points(obj.get().get<std::string>());
    const auto n = static_cast<int64_t>(arr ? obj.get().size() : cp.size() - 1);
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::min(std::max(v, lo), hi);
    };
    const int64_t start = given[0] ? clamp(bound[0], stride > 0 ? 0 : -1, stride > 0 ? n : n - 1)
                                   : (stride > 0 ? 0 : n - 1);
    const int64_t stop = given[1] ? clamp(bound[1], stride > 0 ? 0 : -1, stride > 0 ? n : n - 1)
                                  : (stride > 0 ? n : -1);
    Json out = arr ? Json::array() : Json("");
    std::string s;
    for (int64_t i = start; stride > 0 ? i < stop : i > stop;) {
      step(e.line);
      const auto u = static_cast<size_t>(i);
      if (arr)
        out.push_back(obj.get()[u]);
      else
        s += obj.get().get_ref<const std::string&>().substr(cp[u], cp[u + 1] - cp[u]);
      if (__builtin_add_overflow(i, stride, &i)) break;
    }
    return arr ? Value::of(std::move(out)) : Value::of(std::move(s));
  }

  Value unary(const Expr& e) {
    const Value v = eval(*e.a[0]);
    if (e.name == "not") return Value::of(!truthy(v));
    if (!v.json() || !(v.get().is_number() || v.get().is_boolean()))
      fail_line(e.line, fmt::format("unary '{}' of {}", e.name, type_name(v)));
    if (e.name == "+") return v;
    const Json& j = v.get();
    if (j.is_number_float()) return Value::of(-j.get<double>());
    const int64_t x = j.is_boolean() ? j.get<bool>() : j.get<int64_t>();
    if (x == std::numeric_limits<int64_t>::min()) fail_line(e.line, "integer overflow");
    return Value::of(-x);
  }

  Value binary(const Expr& e);
  Value arithmetic(const std::string& op, const Value& a, const Value& b, int line);
  Value call(const Expr& e);

  const RenderLimits& lim_;
  int64_t steps_ = 0;
  std::string out_;
  std::vector<std::map<std::string, Value>> scopes_;
};

Value Renderer::binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and" || op == "or") {
    Value l = eval(*e.a[0]);
    if (truthy(l) == (op == "or")) return l;
    return eval(*e.a[1]);
  }
  const Value l = eval(*e.a[0]), r = eval(*e.a[1]);
  if (op == "==") return Value::of(equal(l, r));
  if (op == "!=") return Value::of(!equal(l, r));
  if (op == "<") return Value::of(less(l, r, e.line));
  if (op == ">") return Value::of(less(r, l, e.line));
  if (op == "<=") return Value::of(!less(r, l, e.line));
  if (op == ">=") return Value::of(!less(l, r, e.line));
  if (op == "in" || op == "notin") {
    bool found = false;
    if (r.json() && r.get().is_string()) {
      if (!l.json() || !l.get().is_string())
        fail_line(e.line, fmt::format("'in <string>' needs a string, got {}", type_name(l)));
      found = r.get().get_ref<const std::string&>().find(l.get().get<std::string>()) !=
              std::string::npos;
    } else if (r.json() && r.get().is_array()) {
      for (const auto& x : r.get())
        if ((found = equal(l, r.child(x)))) break;
    } else if (r.json() && r.get().is_object()) {
      found = l.json() && l.get().is_string() && r.get().contains(l.get().get<std::string>());
    } else if (!r.undefined()) {
      fail_line(e.line, fmt::format("'in' needs a string, list or dict, got {}", type_name(r)));
    }
    return Value::of(found != (op == "notin"));
  }
  if (op == "~") {
    std::string s = to_str(l) + to_str(r);
    charge(s.size(), e.line);
    check_size(s.size(), e.line);
    return Value::of(std::move(s));
  }
  return arithmetic(op, l, r, e.line);
}

Value Renderer::arithmetic(const std::string& op, const Value& l, const Value& r, int line) {
  auto bad = [&]() {
    fail_line(line, fmt::format("cannot apply '{}' to {} and {}", op, type_name(l), type_name(r)));
  };
  if (!l.json() || !r.json()) bad();
  const Json &x = l.get(), &y = r.get();
  if (op == "+" && (x.is_string() || x.is_array()) && x.type() == y.type())
    charge(weight(l) + weight(r), line);
  if (op == "+" && x.is_string() && y.is_string()) {
    check_size(x.get_ref<const std::string&>().size() + y.get_ref<const std::string&>().size(),
               line);
    return Value::of(x.get<std::string>() + y.get<std::string>());
  }
  if (op == "+" && x.is_array() && y.is_array()) {
    check_size(x.size() + y.size(), line);
    Json out = x;
    for (const auto& v : y) out.push_back(v);
    return Value::of(std::move(out));
  }
  const bool xn = x.is_number() || x.is_boolean(), yn = y.is_number() || y.is_boolean();
  if (!xn || !yn) bad();
  const bool ints = !x.is_number_float() && !y.is_number_float();
  const double a = x.is_boolean() ? x.get<bool>() : x.get<double>();
  const double b = y.is_boolean() ? y.get<bool>() : y.get<double>();
  if (op == "/") {
    if (b == 0) fail_line(line, "division by zero");
    return Value::of(a / b);
  }
  if (!ints) {
    if ((op == "//" || op == "%") && b == 0) fail_line(line, "division by zero");
    if (op == "+") return Value::of(a + b);
    if (op == "-") return Value::of(a - b);
    if (op == "*") return Value::of(a * b);
    if (op == "//") return Value::of(std::floor(a / b));
    if (op == "%") return Value::of(a - b * std::floor(a / b));
    return Value::of(std::pow(a, b));
  }
  const int64_t i = x.is_boolean() ? x.get<bool>() : x.get<int64_t>();
  const int64_t k = y.is_boolean() ? y.get<bool>() : y.get<int64_t>();
  int64_t res = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(i, k, &res);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(i, k, &res);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(i, k, &res);
  } else if (op == "//" || op == "%") {
    if (k == 0) fail_line(line, "division by zero");
    if (i == std::numeric_limits<int64_t>::min() && k == -1) fail_line(line, "integer overflow");
    int64_t q = i / k, m = i % k;
    if (m != 0 && ((m < 0) != (k < 0))) --q, m += k;  // Python floors
    res = op == "//" ? q : m;
  } else {  // **
    if (k < 0) return Value::of(std::pow(a, b));
    // By squaring: 1 ** (2 ** 62) is 62 steps, not 2 ** 62.
    res = 1;
    int64_t base = i;
    for (int64_t e = k; e > 0 && !overflow; e >>= 1) {
      if (e & 1) overflow = __builtin_mul_overflow(res, base, &res);
      if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
  }
  if (overflow) fail_line(line, "integer overflow");
  return Value::of(res);
}

Value Renderer::call(const Expr& e) {
  const bool has_subject = e.k != Expr::K::call;
  Value subject;
  std::vector<Value> args;
  for (size_t i = 0; i < e.a.size(); ++i) {
    if (i == 0 && has_subject)
      subject = eval(*e.a[0]);
    else
      args.push_back(eval(*e.a[i]));
  }
  size_t in = weight(subject);
  for (const auto& a : args) in += weight(a);
  charge(in, e.line);
  const Call c{e.name, args, e.kw, e.line};
  Value out;
  switch (e.k) {
    case Expr::K::filter:
      out = apply_filter(subject, c, lim_);
      break;
    case Expr::K::test:
      return Value::of(apply_test(subject, c) != e.negate);
    case Expr::K::method:
      out = call_method(subject, c, lim_);
      break;
    default:
      out = call_function(c);
      break;
  }
  charge(weight(out), e.line);
  return out;
}

}  // namespace

Template::Template(const std::string& source, const ParseLimits& lim)
    : prog_(std::make_unique<Program>(parse(lex(source, lim), lim))) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Json& vars, const RenderLimits& lim) const {
  return Renderer(lim).run(*prog_, vars);
}

}  // namespace seqlab::serve::jinja
