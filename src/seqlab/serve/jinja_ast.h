// The Jinja subset's tokens and syntax tree (serve/jinja.h): what the lexer (jinja_lexer.cpp)
// produces, the parser (jinja_parser.cpp) builds and the evaluator (jinja_eval.cpp) walks.
#pragma once

#include "seqlab/serve/jinja.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace seqlab::serve::jinja {

enum class Tok {
  text,         // s: template text, whitespace control already applied
  var_begin,    // {{
  var_end,      // }}
  block_begin,  // {%
  block_end,    // %}
  name,         // s: an identifier (keywords too)
  string,       // s: the literal's value, escapes resolved
  integer,      // i
  number,       // d: a float literal
  op,           // s: an operator or punctuation: ( ) [ ] { } , . : | = + - ~ * / // % ** == ...
  eof,
};

struct Token {
  Tok kind = Tok::eof;
  std::string s;
  int64_t i = 0;
  double d = 0;
  int line = 1;
};

// Splits source into text and tag tokens; whitespace control ({%- -%}, trim_blocks,
// lstrip_blocks) is resolved here, so text tokens hold exactly what is printed.
std::vector<Token> lex(const std::string& source, const ParseLimits& lim);

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum class K {
    literal,    // lit (shared: evaluating it copies no JSON)
    name,       // name
    list,       // a: elements
    dict,       // a: key0, value0, key1, value1, ...
    attr,       // a[0].name
    subscript,  // a[0][a[1]]
    slice,      // a[0][a[1]:a[2]:a[3]] (null entries: omitted)
    unary,      // name: "-", "+", "not"; a[0]
    binary,     // name: the operator ("and", "or", "notin", "==", "+", ...); a[0], a[1]
    cond,       // a[0] if a[1] else a[2] (a[2] null: undefined)
    filter,     // a[0] | name(a[1..]); the last kw.size() arguments are keyword arguments
    test,       // a[0] is [not] name(a[1..]); negate
    call,       // name(a...): a global function
    method,     // a[0].name(a[1..])
  };
  K k = K::literal;
  int line = 1;
  std::shared_ptr<const Json> lit;
  std::string name;
  std::vector<ExprP> a;
  std::vector<std::string> kw;
  bool negate = false;
};

struct Stmt {
  enum class K { text, output, if_, for_, set };
  K k = K::text;
  int line = 1;
  std::string text;  // text
  ExprP expr;        // output: the value; set: the value; for: the iterable
  // if: (condition, body) per branch; the else branch has a null condition.
  std::vector<std::pair<ExprP, std::vector<Stmt>>> branches;
  std::string var;                    // for: the loop variable; set: the variable
  std::string attr;                   // set ns.attr: the attribute ("" for a plain set)
  std::vector<Stmt> body, else_body;  // for
};

struct Program {
  std::vector<Stmt> body;
};

Program parse(std::vector<Token> tokens, const ParseLimits& lim);

}  // namespace seqlab::serve::jinja
