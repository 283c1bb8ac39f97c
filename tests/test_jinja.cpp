// The Jinja subset (serve/jinja.h) on small templates whose output follows by hand from Jinja2's
// rules as transformers configures it (trim_blocks, lstrip_blocks): whitespace control, operator
// precedence and Python's arithmetic, undefined values, loop variables and scoping, namespaces,
// filters, tests and methods; and the errors: malformed templates, unknown names (refused when
// parsed), raise_exception, nesting and step limits, output limits.
#include "seqlab/serve/jinja.h"

#include <gtest/gtest.h>

#include <string>

using seqlab::serve::jinja::Error;
using seqlab::serve::jinja::Json;
using seqlab::serve::jinja::ParseLimits;
using seqlab::serve::jinja::RenderLimits;
using seqlab::serve::jinja::Template;

namespace {

const Json kVars = {{"messages", Json::array({{{"role", "system"}, {"content", "Be brief."}},
                                              {{"role", "user"}, {"content", "  Hi é!  "}},
                                              {{"role", "assistant"}, {"content", "Hello."}}})},
                    {"bos_token", "<s>"},
                    {"add_generation_prompt", true}};

std::string render(const std::string& src, const Json& vars = kVars, RenderLimits lim = {}) {
  return Template(src).render(vars, lim);
}

// The message of the jinja::Error that parsing (or, with vars, rendering) src throws.
std::string error_of(const std::string& src, bool raised_expected = false) {
  try {
    Template(src).render(kVars);
  } catch (const Error& e) {
    EXPECT_EQ(e.raised, raised_expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error from: " << src;
  return "";
}

void expect_error(const std::string& src, const std::string& part) {
  const std::string msg = error_of(src);
  EXPECT_NE(msg.find(part), std::string::npos) << "template: " << src << "\nerror: " << msg;
}

}  // namespace

TEST(Jinja, TextAndWhitespaceControl) {
  EXPECT_EQ(render("plain text"), "plain text");
  EXPECT_EQ(render("x\n"), "x");  // one trailing newline dropped (keep_trailing_newline off)
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
  // trim_blocks: the newline after a block tag goes; after {{ }} it stays.
  EXPECT_EQ(render("{% if true %}\nx{% endif %}\n{{ 'y' }}\nz"), "xy\nz");
  // lstrip_blocks: indentation before a block tag goes, text before it on the line stays.
  EXPECT_EQ(render("a\n  {% if true %}\n  x\n  {% endif %}\nb"), "a\n  x\nb");
  EXPECT_EQ(render("  {% if true %}x{% endif %}"), "x");
  EXPECT_EQ(render("a  {% if true %}x{% endif %}"), "a  x");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
  // Explicit stripping takes every whitespace character, newlines included.
  EXPECT_EQ(render("a \n {%- if true -%} \n x \n {%- endif %}"), "ax");
  EXPECT_EQ(render("a {{- 'b' -}} \n c"), "abc");
  // Comments: removed, with the block rules.
  EXPECT_EQ(render("a {# note #} b"), "a  b");
  EXPECT_EQ(render("a\n  {# note #}\nb"), "a\nb");
  EXPECT_EQ(render("a {#- note -#} b"), "ab");
}

TEST(Jinja, LiteralsAndOperators) {
  EXPECT_EQ(render("{{ 'a\\nb' }}|{{ \"it's\" }}|{{ 'x' 'y' }}|{{ '\\u00e9\\x41' }}"),
            "a\nb|it's|xy|\xC3\xA9"
            "A");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1.5 + 1 }}"),
            "7 9 1024 3.5 2.5");
  // Python's floor division and modulo.
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ -3 }}"),
            "3 -4 2 -2 -3");
  EXPECT_EQ(render("{{ 1 ~ 'a' ~ true ~ none ~ nothing }}"), "1aTrueNone");
  // A filter binds tighter than +, ~ tighter than + too.
  EXPECT_EQ(render("{{ 'a' + 'b' | upper }}"), "aB");
  EXPECT_EQ(render("{{ [1, 'x', none, true] }} {{ {'k': 'v'} }}"),
            "[1, 'x', None, True] {'k': 'v'}");
  // and/or give an operand; not, comparisons and in give booleans.
  EXPECT_EQ(render("{{ '' or 'b' }} {{ 'a' and 'b' }} {{ 0 and 1 }} {{ not '' }}"), "b b 0 True");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 2 < 10 }} {{ 'b' >= 'a' }} {{ true == 1 }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'role' in messages[0] }} "
                   "{{ 3 not in (1, 2) }} {{ 'x' in nothing }}"),
            "True True True True False");
  EXPECT_EQ(render("{{ 'y' if 1 > 2 else 'n' }}|{{ 'y' if false }}|{{ 'y' if true }}"), "n||y");
}

TEST(Jinja, MembersAndSlices) {
  EXPECT_EQ(render("{{ messages[0].role }} {{ messages[-1]['content'] }} {{ messages | length }}"),
            "system Hello. 3");
  EXPECT_EQ(render("{{ messages[1:] | length }} {{ messages[:-1][-1].role }} {{ messages[5] }}"),
            "2 user ");
  EXPECT_EQ(render("{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ 'hello'[-2:] }} {{ 'hello'[1] }}"),
            "el olleh lo e");
  EXPECT_EQ(render("{{ [1, 2, 3, 4, 5][::2] }} {{ [1, 2, 3][5:] }} {{ [1, 2, 3][-10:1] }}"),
            "[1, 3, 5] [] [1]");
  // Strings index by code point, as Python's.
  EXPECT_EQ(render("{{ messages[1].content | trim | length }} {{ 'é!'[0] }} {{ 'aé'[::-1] }}"),
            "5 \xC3\xA9 \xC3\xA9"
            "a");
  EXPECT_EQ(render("{{ messages[0].missing }}|{{ missing is defined }}|{{ messages[0].role is "
                   "defined }}|{% for x in missing %}x{% endfor %}"),
            "|False|True|");
}

TEST(Jinja, LoopsScopesAndNamespaces) {
  EXPECT_EQ(
      render("{% for m in ['a', 'b', 'c'] %}{{ loop.index0 }}{{ loop.index }}{{ loop.revindex }}"
             "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
      "0132TrueFalse3|1221FalseFalse3|2310FalseTrue3|");
  EXPECT_EQ(render("{% for m in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}{% for c in 'hé' %}[{{ c }}]"
                   "{% endfor %}"),
            "ba[h][\xC3\xA9]");
  // A set in a loop body does not leave it, nor carry to the next iteration (Jinja2's frames);
  // a set in an if does leave it.
  EXPECT_EQ(
      render("{% set x = 1 %}{% for m in [1, 2] %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}"),
      "221");
  EXPECT_EQ(render("{% if true %}{% set y = 'in' %}{% endif %}{{ y }}"), "in");
  EXPECT_EQ(
      render("{% set ns = namespace(n=0, s='') %}{% for m in [1, 2, 3] %}{% set ns.n = ns.n + m "
             "%}{% set ns.s = ns.s ~ m %}{% endfor %}{{ ns.n }} {{ ns.s }}"),
      "6 123");
  EXPECT_EQ(
      render("{% for m in messages %}{% for c in m.role %}{% if loop.first %}{{ c }}{% endif %}"
             "{% endfor %}{% endfor %}"),
      "sua");
}

TEST(Jinja, FiltersTestsAndMethods) {
  EXPECT_EQ(render("[{{ '  x y \\n' | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ 'aB' | upper }} "
                   "{{ 'aB' | lower }} {{ 'hELLO' | capitalize }} {{ 12 | string | length }}"),
            "[x y] [a] AB ab Hello 2");
  EXPECT_EQ(render("{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | d('d', true) }} "
                   "{{ [3, 4] | first }} {{ [3, 4] | last }} {{ [1, 'a'] | join('-') }} "
                   "{{ 'ab' | list }}"),
            "d  d 3 4 1-a ['a', 'b']");
  // tojson is json.dumps(ensure_ascii=False): Python's separators, keys in order, no HTML escaping.
  EXPECT_EQ(render("{{ {'b': [1, 'é<>', none, true], 'a': 1.5} | tojson }}"),
            "{\"b\": [1, \"\xC3\xA9<>\", null, true], \"a\": 1.5}");
  EXPECT_EQ(render("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ messages[0] | tojson }}"),
            "{\"role\": \"system\", \"content\": \"Be brief.\"}");
  EXPECT_EQ(render("{{ none is none }} {{ 'a' is string }} {{ 1 is number }} {{ 1.0 is integer }} "
                   "{{ {} is mapping }} {{ [] is sequence }} {{ 3 is odd }} {{ 4 is even }} "
                   "{{ 9 is divisibleby 3 }} {{ 'a' is equalto('a') }} {{ 1 is not none }}"),
            "True True True False True True True True True True True");
  EXPECT_EQ(render("[{{ '  a  '.strip() }}] [{{ '  a  '.lstrip() }}] [{{ '  a  '.rstrip() }}] "
                   "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'a b  c'.split() }} "
                   "{{ 'a,b'.split(',') }} {{ 'aXbX'.replace('X', '-') }} {{ 'Ab'.upper() }}"),
            "[a] [a  ] [  a] True True ['a', 'b', 'c'] ['a', 'b'] a-b- AB");
  EXPECT_EQ(render("{{ messages[0].get('role') }} {{ messages[0].get('x', 'd') }} "
                   "{{ messages[0].keys() }}"),
            "system d ['role', 'content']");
}

TEST(Jinja, RaiseException) {
  const std::string msg = error_of("a{{ raise_exception('Roles must alternate!') }}b", true);
  EXPECT_EQ(msg, "Roles must alternate!");
}

TEST(Jinja, MalformedTemplatesAreErrors) {
  expect_error("{{ x", "line 1: unterminated '{{' tag");
  expect_error("a\n{% if true", "line 2: unterminated '{%' tag");
  expect_error("{% if true %}x", "has no '{% endif %}'");
  expect_error("{% for m in messages %}x", "has no '{% endfor %}'");
  expect_error("{% endif %}", "unexpected '{% endif %}'");
  expect_error("{% else %}", "unexpected '{% else %}'");
  expect_error("{# open", "unterminated comment");
  expect_error("{{ 'abc }}", "unterminated string literal");
  expect_error("{{ 1 + }}", "unexpected '}}'");
  expect_error("{{ a b }}", "expected '}}'");
  expect_error("{{ (1 }}", "expected ')'");
  expect_error("{{ x @ y }}", "unexpected character '@'");
  expect_error("{{ 99999999999999999999 }}", "too large");
  expect_error("{{ a < b < c }}", "expected '}}'");
}

TEST(Jinja, UnsupportedConstructsAreRefusedWhenParsed) {
  expect_error("{{ x | reject('equalto', 1) }}", "the filter 'reject' is not supported");
  expect_error("{% if x is callable %}{% endif %}", "the test 'callable' is not supported");
  expect_error("{{ range(3) }}", "the function 'range' is not supported");
  expect_error("{{ 'a'.format(1) }}", "the method 'format' is not supported");
  expect_error("{{ messages[0](1) }}", "only named functions can be called");
  expect_error("{% macro f() %}{% endmacro %}", "the tag '{% macro %}' is not supported");
  expect_error("{% include 'x' %}", "the tag '{% include %}' is not supported");
  expect_error("{% raw %}{% endraw %}", "the tag '{% raw %}' is not supported");
  expect_error("{% for m in messages %}{% break %}{% endfor %}", "the tag '{% break %}'");
  expect_error("{% for k, v in x %}{% endfor %}", "tuple unpacking");
  expect_error("{% for m in messages if m %}{% endfor %}", "is not supported");
  expect_error("{% set x %}a{% endset %}", "'{% set %}' blocks");
  // Refused before rendering: the unknown filter sits in a branch that would never run.
  expect_error("{% if false %}{{ x | wordcount }}{% endif %}", "the filter 'wordcount'");
}

TEST(Jinja, RenderErrors) {
  expect_error("{{ missing.attr }}", "line 1: cannot read '.attr' of an undefined value");
  expect_error("{{ 'a' + 1 }}", "cannot apply '+' to a string and a number");
  expect_error("{{ missing + 'a' }}", "cannot apply '+' to undefined");
  expect_error("{{ 1 // 0 }}", "division by zero");
  expect_error("{{ 2 ** 64 }}", "integer overflow");
  expect_error("{{ 1 < 'a' }}", "cannot compare");
  expect_error("{% for x in 5 %}{% endfor %}", "cannot iterate over a number");
  expect_error("{{ 'abc'[::0] }}", "slice step cannot be zero");
  expect_error("{% set x = 1 %}{% set x.a = 2 %}", "not a namespace");
  expect_error("{{ 'a'.get('x') }}", "a string has no method 'get'");
  expect_error("{{ messages | tojson(indent='x') }}", "indent must be an integer");
  expect_error("{{ raise_exception() }}", "'raise_exception' takes 1 to 1 arguments");
}

TEST(Jinja, NestingIsBounded) {
  std::string deep_if, deep_paren;
  for (int i = 0; i < 100; ++i) deep_if += "{% if true %}";
  for (int i = 0; i < 100; ++i) deep_if += "{% endif %}";
  expect_error(deep_if, "nesting deeper than 64 levels");
  deep_paren = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  expect_error(deep_paren, "nesting deeper than 64 levels");
  expect_error("{{ " + std::string(100000, '-') + "1 }}", "nesting deeper than 64 levels");
  expect_error("{{ " + std::string(100000, '[') + " }}", "nesting deeper than 64 levels");
  // 30 levels parse and render.
  std::string ok;
  for (int i = 0; i < 30; ++i) ok += "{% if true %}";
  ok += "x";
  for (int i = 0; i < 30; ++i) ok += "{% endif %}";
  EXPECT_EQ(render(ok), "x");
  ParseLimits small;
  small.max_depth = 4;
  EXPECT_THROW(Template("{{ ((((1)))) }}", small), Error);
  EXPECT_THROW(Template(std::string(2 << 20, 'x')), Error);  // over max_source_bytes
}

TEST(Jinja, HugeLoopsAndOutputsAreBounded) {
  Json vars = kVars;
  vars["messages"] = Json::array();
  for (int i = 0; i < 300; ++i) vars["messages"].push_back({{"role", "user"}, {"content", "x"}});
  const std::string cubic =
      "{% for a in messages %}{% for b in messages %}{% for c in messages %}x{% endfor %}"
      "{% endfor %}{% endfor %}";
  try {
    render(cubic, vars);
    ADD_FAILURE() << "27M iterations rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("budget of 1000000 steps"), std::string::npos) << e.what();
  }
  // Doubling a string: the size limit stops it long before memory runs out.
  RenderLimits lim;
  lim.max_output_bytes = 1 << 16;
  const std::string doubling =
      "{% set ns = namespace(s='x') %}{% for m in messages %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}{{ ns.s | length }}";
  EXPECT_THROW(render(doubling, vars, lim), Error);
  EXPECT_THROW(render("{% for m in messages %}0123456789{{ m | tojson }}{% endfor %}", vars,
                      RenderLimits{1'000'000, 1000}),
               Error);
  // Below the limits the same shapes render.
  EXPECT_EQ(render("{% for a in messages %}{% for b in messages %}x{% endfor %}{% endfor %}", vars)
                .size(),
            90000u);
}

TEST(Jinja, ArithmeticEdgesStayDefined) {
  // Found by reading for overflow: each is Python's answer, computed without undefined behaviour.
  EXPECT_EQ(render("{{ 1 ** (2 ** 62) }} {{ (-1) ** (2 ** 62 + 1) }} {{ 0 ** 0 }}"), "1 -1 1");
  EXPECT_EQ(render("{{ 'abc'[2::2 ** 62 + (2 ** 62 - 1)] }}"), "c");
  EXPECT_EQ(render("{{ (-(2 ** 62) * 2) is divisibleby(-1) }}"), "True");
  EXPECT_EQ(render("{{ 1" + std::string(400, '0') + ".5 > 1 }}"), "True");  // inf, no exception
  expect_error("{{ (-(2 ** 62) * 2) // -1 }}", "integer overflow");
}

TEST(Jinja, WorkOnLongStringsCountsAgainstTheBudget) {
  // 400 iterations each indexing a 256 KiB string: 400 steps by count, 1.6M by bytes read.
  Json vars = kVars;
  vars["messages"] = Json::array();
  for (int i = 0; i < 400; ++i) vars["messages"].push_back({{"role", "user"}, {"content", "x"}});
  vars["big"] = std::string(1 << 18, 'a');
  try {
    render("{% for m in messages %}{{ big[0] }}{% endfor %}", vars);
    ADD_FAILURE() << "rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
  }
  EXPECT_EQ(render("{% for m in messages[:10] %}{{ big[0] }}{% endfor %}", vars), "aaaaaaaaaa");
  vars["big"] = std::string((1 << 20) + 1, 'a');
  try {
    render("{{ big | list | length }}", vars);
    ADD_FAILURE() << "rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too long to list"), std::string::npos) << e.what();
  }
}
