// The Jinja subset's parser (serve/jinja.h): recursive descent over jinja_lexer.cpp's tokens, with
// Jinja2's operator precedence (lowest first): x if c else y; or; and; not; comparisons and in;
// + -; ~; * / // %; **; unary - +; then a primary with its .attr, [index], [a:b], calls, filters
// and tests. Names of filters, tests, functions and methods are checked here against
// jinja_builtins.cpp, so an unknown one refuses the template before anything renders.
#include "seqlab/serve/jinja_ast.h"
#include "seqlab/serve/jinja_value.h"

#include <fmt/format.h>

namespace seqlab::serve::jinja {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> t, const ParseLimits& lim) : t_(std::move(t)), lim_(lim) {}

  Program program() {
    Program p;
    const std::string end = body(p.body, {});
    if (!end.empty()) fail(fmt::format("unexpected '{{% {} %}}'", end));
    return p;
  }

 private:
  // Guards one level of nesting (a block or a sub-expression).
  struct Depth {
    Parser& p;
    explicit Depth(Parser& p) : p(p) {
      if (++p.depth_ > p.lim_.max_depth)
        p.fail(fmt::format("nesting deeper than {} levels", p.lim_.max_depth));
    }
    ~Depth() { --p.depth_; }
  };

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("line {}: {}", cur().line, msg));
  }
  const Token& cur() const { return t_[i_]; }
  bool at_op(const char* op) const { return cur().kind == Tok::op && cur().s == op; }
  bool at_name(const char* n) const { return cur().kind == Tok::name && cur().s == n; }
  bool accept_op(const char* op) {
    if (!at_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!at_name(n)) return false;
    ++i_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(fmt::format("expected '{}', got {}", op, describe(cur())));
  }
  std::string expect_name() {
    if (cur().kind != Tok::name) fail(fmt::format("expected a name, got {}", describe(cur())));
    return t_[i_++].s;
  }
  void expect_block_end() {
    if (cur().kind != Tok::block_end)
      fail(fmt::format("expected the end of the tag, got {}", describe(cur())));
    ++i_;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::name:
        return "'" + t.s + "'";
      case Tok::op:
        return "'" + t.s + "'";
      case Tok::string:
        return "a string";
      case Tok::integer:
      case Tok::number:
        return "a number";
      case Tok::var_end:
        return "'}}'";
      case Tok::block_end:
        return "'%}'";
      case Tok::eof:
        return "the end of the template";
      default:
        return "text";
    }
  }
  ExprP node(Expr::K k, int line) {
    auto e = std::make_unique<Expr>();
    e->k = k;
    e->line = line;
    return e;
  }

  // Statements until one of `ends` opens a block tag (returned, its name consumed) or the input
  // ends ("" returned).
  std::string body(std::vector<Stmt>& out, std::initializer_list<const char*> ends) {
    while (true) {
      const Token& t = cur();
      if (t.kind == Tok::eof) return "";
      if (t.kind == Tok::text) {
        Stmt s;
        s.k = Stmt::K::text;
        s.line = t.line;
        s.text = t.s;
        out.push_back(std::move(s));
        ++i_;
      } else if (t.kind == Tok::var_begin) {
        ++i_;
        Stmt s;
        s.k = Stmt::K::output;
        s.line = t.line;
        s.expr = expr();
        if (cur().kind != Tok::var_end)
          fail(fmt::format("expected '}}}}', got {}", describe(cur())));
        ++i_;
        out.push_back(std::move(s));
      } else {
        ++i_;  // block_begin
        const std::string name = expect_name();
        for (const char* e : ends)
          if (name == e) return name;
        if (name == "endif" || name == "endfor" || name == "else" || name == "elif")
          fail(fmt::format("unexpected '{{% {} %}}'", name));
        out.push_back(block(name, t.line));
      }
    }
  }

  Stmt block(const std::string& name, int line) {
    Depth d(*this);
    Stmt s;
    s.line = line;
    if (name == "if") {
      s.k = Stmt::K::if_;
      std::string end = "elif";
      while (end == "elif") {
        ExprP cond = expr();
        expect_block_end();
        s.branches.emplace_back(std::move(cond), std::vector<Stmt>{});
        end = body(s.branches.back().second, {"elif", "else", "endif"});
        if (end.empty()) fail(fmt::format("'{{% if %}}' on line {} has no '{{% endif %}}'", line));
      }
      if (end == "else") {
        expect_block_end();
        s.branches.emplace_back(nullptr, std::vector<Stmt>{});
        if (body(s.branches.back().second, {"endif"}).empty())
          fail(fmt::format("'{{% if %}}' on line {} has no '{{% endif %}}'", line));
      }
      expect_block_end();
    } else if (name == "for") {
      s.k = Stmt::K::for_;
      s.var = expect_name();
      if (at_op(",")) fail("tuple unpacking in '{% for %}' is not supported");
      if (!accept_name("in")) fail(fmt::format("expected 'in', got {}", describe(cur())));
      s.expr = or_expr();  // not a conditional: `for x in xs if c` is a loop filter
      if (at_name("if") || at_name("recursive"))
        fail(fmt::format("'{{% for ... {} %}}' is not supported", cur().s));
      expect_block_end();
      std::string end = body(s.body, {"else", "endfor"});
      if (end == "else") {
        expect_block_end();
        end = body(s.else_body, {"endfor"});
      }
      if (end.empty()) fail(fmt::format("'{{% for %}}' on line {} has no '{{% endfor %}}'", line));
      expect_block_end();
    } else if (name == "set") {
      s.k = Stmt::K::set;
      s.var = expect_name();
      if (accept_op(".")) s.attr = expect_name();
      if (!accept_op("=")) fail("'{% set %}' blocks and tuple targets are not supported");
      s.expr = expr();
      expect_block_end();
    } else {
      fail(fmt::format("the tag '{{% {} %}}' is not supported", name));
    }
    return s;
  }

  ExprP expr() {
    Depth d(*this);
    const int line = cur().line;
    ExprP e = or_expr();
    if (!accept_name("if")) return e;
    auto c = node(Expr::K::cond, line);
    c->a.push_back(std::move(e));
    c->a.push_back(or_expr());
    c->a.push_back(accept_name("else") ? expr() : nullptr);
    return c;
  }

  ExprP binary(const std::string& op, ExprP l, ExprP r, int line) {
    auto b = node(Expr::K::binary, line);
    b->name = op;
    b->a.push_back(std::move(l));
    b->a.push_back(std::move(r));
    return b;
  }

  // One left-associative level: operands from `next`, joined by the operators `ops` (keywords
  // when `names`, else symbols).
  ExprP left_assoc(ExprP (Parser::*next)(), std::initializer_list<const char*> ops, bool names) {
    ExprP l = (this->*next)();
    while (true) {
      const char* hit = nullptr;
      for (const char* op : ops)
        if (names ? at_name(op) : at_op(op)) hit = op;
      if (!hit) return l;
      const int line = t_[i_++].line;
      l = binary(hit, std::move(l), (this->*next)(), line);
    }
  }
  ExprP or_expr() { return left_assoc(&Parser::and_expr, {"or"}, true); }
  ExprP and_expr() { return left_assoc(&Parser::not_expr, {"and"}, true); }
  ExprP not_expr() {
    if (!at_name("not")) return compare();
    Depth d(*this);
    auto u = node(Expr::K::unary, t_[i_++].line);
    u->name = "not";
    u->a.push_back(not_expr());
    return u;
  }
  ExprP compare() {
    ExprP l = math1();
    // Chains (a < b < c) are not supported: one comparison per level.
    static const char* kCmp[] = {"==", "!=", "<", "<=", ">", ">="};
    for (const char* op : kCmp)
      if (at_op(op)) {
        const int line = t_[i_++].line;
        return binary(op, std::move(l), math1(), line);
      }
    if (at_name("in")) {
      const int line = t_[i_++].line;
      return binary("in", std::move(l), math1(), line);
    }
    if (at_name("not") && t_[i_ + 1].kind == Tok::name && t_[i_ + 1].s == "in") {
      const int line = cur().line;
      i_ += 2;
      return binary("notin", std::move(l), math1(), line);
    }
    return l;
  }
  ExprP math1() { return left_assoc(&Parser::concat, {"+", "-"}, false); }
  ExprP concat() { return left_assoc(&Parser::math2, {"~"}, false); }
  ExprP math2() { return left_assoc(&Parser::power, {"*", "/", "//", "%"}, false); }
  ExprP power() { return left_assoc(&Parser::filtered_unary, {"**"}, false); }
  ExprP filtered_unary() { return unary(true); }
  ExprP unary(bool with_filter) {
    Depth d(*this);
    ExprP e;
    if (at_op("-") || at_op("+")) {
      e = node(Expr::K::unary, cur().line);
      e->name = t_[i_++].s;
      e->a.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    return with_filter ? filters(std::move(e)) : std::move(e);
  }

  ExprP primary() {
    const Token& t = cur();
    auto e = node(Expr::K::literal, t.line);
    switch (t.kind) {
      case Tok::string: {
        // Adjacent literals concatenate ('a' 'b' is 'ab'), as in Python.
        std::string s;
        while (cur().kind == Tok::string) s += t_[i_++].s;
        e->lit = std::make_shared<const Json>(std::move(s));
        return e;
      }
      case Tok::integer:
        e->lit = std::make_shared<const Json>(t.i);
        break;
      case Tok::number:
        e->lit = std::make_shared<const Json>(t.d);
        break;
      case Tok::name:
        if (t.s == "true" || t.s == "True") {
          e->lit = std::make_shared<const Json>(true);
        } else if (t.s == "false" || t.s == "False") {
          e->lit = std::make_shared<const Json>(false);
        } else if (t.s == "none" || t.s == "None") {
          e->lit = std::make_shared<const Json>(nullptr);
        } else {
          e->k = Expr::K::name;
          e->name = t.s;
        }
        break;
      case Tok::op:
        if (t.s == "(") return parenthesized();
        if (t.s == "[" || t.s == "{") return collection(t.s == "{");
        [[fallthrough]];
      default:
        fail(fmt::format("unexpected {}", describe(t)));
    }
    ++i_;
    return e;
  }

  // (e) or a tuple (a, b), which is a list here.
  ExprP parenthesized() {
    const int line = t_[i_++].line;
    ExprP first = expr();
    if (accept_op(")")) return first;
    auto l = node(Expr::K::list, line);
    l->a.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op(")")) break;
      l->a.push_back(expr());
    }
    expect_op(")");
    return l;
  }

  ExprP collection(bool dict) {
    const int line = t_[i_++].line;
    auto c = node(dict ? Expr::K::dict : Expr::K::list, line);
    const char* close = dict ? "}" : "]";
    while (!accept_op(close)) {
      if (!c->a.empty()) {
        expect_op(",");
        if (accept_op(close)) break;
      }
      c->a.push_back(expr());
      if (dict) {
        expect_op(":");
        c->a.push_back(expr());
      }
    }
    return c;
  }

  // Arguments after '(' up to ')': positional, then keyword (name=value). They follow whatever
  // call.a already holds (a method's, filter's or test's subject).
  void arguments(Expr& call) {
    bool first = true;
    while (!accept_op(")")) {
      if (!first) {
        expect_op(",");
        if (accept_op(")")) break;
      }
      first = false;
      if (cur().kind == Tok::name && t_[i_ + 1].kind == Tok::op && t_[i_ + 1].s == "=") {
        call.kw.push_back(t_[i_].s);
        i_ += 2;
      } else if (!call.kw.empty()) {
        fail("a positional argument after a keyword argument");
      }
      call.a.push_back(expr());
    }
  }

  ExprP postfix(ExprP e) {
    while (true) {
      const int line = cur().line;
      if (accept_op(".")) {
        std::string name = expect_name();
        if (at_op("(")) {
          ++i_;
          if (!is_method(name)) fail(fmt::format("the method '{}' is not supported", name));
          auto m = node(Expr::K::method, line);
          m->name = std::move(name);
          m->a.push_back(std::move(e));
          arguments(*m);
          e = std::move(m);
        } else {
          auto a = node(Expr::K::attr, line);
          a->name = std::move(name);
          a->a.push_back(std::move(e));
          e = std::move(a);
        }
      } else if (accept_op("[")) {
        e = subscript(std::move(e), line);
      } else if (accept_op("(")) {
        if (e->k != Expr::K::name) fail("only named functions can be called");
        if (!is_function(e->name)) fail(fmt::format("the function '{}' is not supported", e->name));
        auto c = node(Expr::K::call, line);
        c->name = e->name;
        arguments(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprP subscript(ExprP obj, int line) {
    Depth d(*this);
    ExprP parts[3];
    int colons = 0;
    for (int k = 0; k < 3; ++k) {
      if (!at_op(":") && !at_op("]")) parts[k] = expr();
      if (k < 2 && accept_op(":")) {
        ++colons;
        continue;
      }
      break;
    }
    expect_op("]");
    if (colons == 0) {
      if (!parts[0]) fail("an empty subscript");
      auto s = node(Expr::K::subscript, line);
      s->a.push_back(std::move(obj));
      s->a.push_back(std::move(parts[0]));
      return s;
    }
    auto s = node(Expr::K::slice, line);
    s->a.push_back(std::move(obj));
    for (auto& p : parts) s->a.push_back(std::move(p));
    return s;
  }

  ExprP filters(ExprP e) {
    while (true) {
      const int line = cur().line;
      if (accept_op("|")) {
        auto f = node(Expr::K::filter, line);
        f->name = expect_name();
        if (!is_filter(f->name)) fail(fmt::format("the filter '{}' is not supported", f->name));
        f->a.push_back(std::move(e));
        if (accept_op("(")) arguments(*f);
        e = std::move(f);
      } else if (accept_name("is")) {
        auto t = node(Expr::K::test, line);
        t->negate = accept_name("not");
        t->name = expect_name();
        if (!is_test(t->name)) fail(fmt::format("the test '{}' is not supported", t->name));
        t->a.push_back(std::move(e));
        if (accept_op("(")) {
          arguments(*t);
        } else if (cur().kind == Tok::string || cur().kind == Tok::integer ||
                   cur().kind == Tok::number) {
          t->a.push_back(primary());  // `is divisibleby 3`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  const ParseLimits& lim_;
};

}  // namespace

Program parse(std::vector<Token> tokens, const ParseLimits& lim) {
  return Parser(std::move(tokens), lim).program();
}

}  // namespace seqlab::serve::jinja
