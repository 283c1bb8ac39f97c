// A small, strict subset of Jinja2: enough for the chat templates models publish in their
// tokenizer_config.json (Llama 2 and 3, ChatML, Zephyr, Mistral, Gemma, ...), rendered as
// Hugging Face's apply_chat_template renders them (trim_blocks and lstrip_blocks on).
//
// Strict means: everything the parser does not know (a tag, filter, test, function or method it
// has no code for) is a parse error naming it, so a template is refused at load time, never half
// rendered. What it knows (docs/serve.md has the full list):
//   {{ expr }}, {% if/elif/else/endif %}, {% for x in xs %}...{% else %}...{% endfor %} with
//   loop.index0/index/revindex/revindex0/first/last/length, {% set x = e %}, {% set ns.a = e %},
//   comments {# #}, whitespace control {%- -%} {{- -}} {#- -#} and {%+;
//   literals: strings, integers, floats, true/false/none (any case), [lists], {dicts};
//   operators: or and not, == != < <= > >= in, not in, + - ~ * / // % **, x if c else y,
//   x.attr, x['key'], x[i], x[a:b:c], is [not] <test>, | filter;
//   functions raise_exception(msg) and namespace(k=v, ...); filters, tests and string methods
//   listed in jinja_builtins.cpp.
//
// Rendering is bounded: a step budget (every expression and statement evaluated counts one, and
// every 64 bytes a string operation reads or writes one more), an output size and a string size
// limit; the parser bounds nesting depth. Every failure is a
// jinja::Error, never a crash.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace seqlab::serve::jinja {

// Values keep their objects' key order (Python dicts do; tojson shows it).
using Json = nlohmann::ordered_json;

struct Error : std::runtime_error {
  // raised: the template called raise_exception(msg); what() is msg alone.
  bool raised = false;
  explicit Error(const std::string& msg, bool raised = false)
      : std::runtime_error(msg), raised(raised) {}
};

struct ParseLimits {
  int max_depth = 64;  // nested blocks plus nested expressions
  size_t max_source_bytes = size_t{1} << 20;
};

struct RenderLimits {
  int64_t max_steps = 1'000'000;
  size_t max_output_bytes = size_t{4} << 20;  // also the largest string or list value
};

struct Program;  // the parsed template (jinja_ast.h)

class Template {
 public:
  // Parses `source`; a jinja::Error ("line N: ...") if it is malformed or uses anything unknown.
  explicit Template(const std::string& source, const ParseLimits& lim = {});
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  // Renders with `vars` (an object: the template's global variables). Thread-safe: a Template is
  // immutable once parsed.
  std::string render(const Json& vars, const RenderLimits& lim = {}) const;

 private:
  std::unique_ptr<Program> prog_;
};

}  // namespace seqlab::serve::jinja
