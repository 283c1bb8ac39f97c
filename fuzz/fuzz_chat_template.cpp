// Fuzzes the Jinja subset that renders models' chat templates (serve/jinja.h,
// serve/chat_template.h) on arbitrary bytes: each input is a template source, parsed, then
// rendered on three conversations (none, one and several messages, with special tokens), as
// ChatTemplate::from_config does at load time and apply() per request. jinja::Error is the
// expected answer to a malformed or unsupported template and to one that fails on a conversation;
// any other exception, a crash, a sanitizer report or a timeout is a finding (a template is local
// configuration, but the server must never fall over on one; a request's messages are the
// client's). Oracles: rendering is deterministic (twice, the same output); the output stays
// within RenderLimits; from_config never throws and names a reason for every refusal.
#include "fuzz_common.h"

#include "seqlab/serve/chat_template.h"
#include "seqlab/serve/jinja.h"

using namespace seqlab;
using serve::jinja::Json;

namespace {

const serve::jinja::RenderLimits kLim{200'000, 1 << 20};

std::vector<Json> conversations() {
  auto msg = [](const char* role, const char* content) {
    return Json{{"role", role}, {"content", content}};
  };
  std::vector<Json> out;
  for (const Json& ms :
       {Json::array(), Json::array({msg("user", "Hello")}),
        Json::array({msg("system", "Be brief."), msg("user", "  Hi \xC3\xA9!  "),
                     msg("assistant", "Hello."), msg("user", "{{ not a template }}")})})
    out.push_back({{"messages", ms},
                   {"bos_token", "<s>"},
                   {"eos_token", "</s>"},
                   {"add_generation_prompt", true}});
  return out;
}

void render_all(const serve::jinja::Template& t) {
  static const auto convs = conversations();
  for (const auto& vars : convs) {
    std::string first;
    try {
      first = t.render(vars, kLim);
    } catch (const serve::jinja::Error&) {
      continue;
    }
    if (first.size() > kLim.max_output_bytes)
      fuzz::finding(fmt::format("an output of {} bytes passed the limit", first.size()));
    if (t.render(vars, kLim) != first) fuzz::finding("two renders differ");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::maybe_write_seeds({
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
      "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\n' }}{% endif %}",
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
      "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% "
      "set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
      "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
      "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == "
      "0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
      "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
      "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() "
      "+ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + "
      "eos_token }}{% endif %}{% endfor %}",
      "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
      "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ "
      "'<|system|>\n' + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
      "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
      "{%- set ns = namespace(n=0, s='') -%}\n{%- for m in messages[::-1] if true -%}\n  {{- "
      "m.content | trim | tojson(indent=2) ~ (ns.n // 2) -}}\n  {%- set ns.n = ns.n + loop.index "
      "-%}\n{%- else %}{# none #}{{ 'x' if m is defined else [1, 2.5, none] | join(',') }}"
      "{%- endfor %}",
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string src(reinterpret_cast<const char*>(data), size);
  try {
    render_all(serve::jinja::Template(src));
  } catch (const serve::jinja::Error&) {
  } catch (const std::exception& e) {
    fuzz::finding(fmt::format("template: {} escaped as a non-jinja error", e.what()));
  }
  try {
    const auto t = serve::ChatTemplate::from_config({{"chat_template", src}}, "fuzz");
    if (!t.is_model() && t.reason().empty()) fuzz::finding("a refusal without a reason");
  } catch (const std::exception& e) {
    fuzz::finding(fmt::format("from_config threw: {}", e.what()));
  }
  return 0;
}
