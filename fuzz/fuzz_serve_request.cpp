// Fuzzes the OpenAI request bodies `seqlab serve` reads (serve/api.h) on arbitrary bytes: each
// input is parsed as a /v1/completions and as a /v1/chat/completions body, with the byte tokenizer
// and with none (a model that takes token ids only), a chat also through a model's chat template
// (serve/chat_template.h, a ChatML one), as the server's handler does before anything reaches the
// scheduler. ApiError is the expected answer to a bad body; any other exception means
// a field escaped validation (the server would still answer 400, but with a library's message
// instead of one naming the field), so it is a finding.
// Oracles: an accepted request is within the limits the scheduler relies on (non-empty prompts no
// longer than the limits, ids in [0, V), max_tokens, logprobs, sampler ranges, at most 4 non-empty
// stop strings); valid_utf8 returns well-formed UTF-8 and is idempotent; utf8_complete never cuts
// past the end and keeps valid text whole.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/serve/api.h"
#include "seqlab/text/tokenizer.h"

#include <cmath>

using namespace seqlab;
using serve::ApiError;
using serve::CompletionRequest;

namespace {

serve::Limits limits() {
  serve::Limits lim;
  lim.max_prompt_tokens = 64;
  lim.max_output_tokens = 4096;
  lim.max_sequence = 128;
  lim.vocab_size = 257;  // the byte tokenizer's
  lim.max_logprobs = 20;
  return lim;
}

void check_accepted(const CompletionRequest& r, const serve::Limits& lim) {
  if (r.prompts.empty()) fuzz::finding("an accepted request has no prompt");
  for (const auto& p : r.prompts) {
    if (p.empty()) fuzz::finding("an accepted prompt is empty");
    if (static_cast<int64_t>(p.size()) > lim.max_prompt_tokens ||
        static_cast<int64_t>(p.size()) >= lim.max_sequence)
      fuzz::finding(fmt::format("an accepted prompt has {} tokens", p.size()));
    for (int64_t t : p)
      if (t < 0 || t >= lim.vocab_size) fuzz::finding(fmt::format("accepted token id {}", t));
  }
  const auto& g = r.gen;
  if (g.max_tokens < 0 || g.max_tokens > lim.max_output_tokens)
    fuzz::finding(fmt::format("accepted max_tokens {}", g.max_tokens));
  if (g.logprobs < -1 || g.logprobs > lim.max_logprobs)
    fuzz::finding(fmt::format("accepted logprobs {}", g.logprobs));
  const auto& s = g.sampler;
  if (!(s.temperature >= 0 && s.temperature <= 100) || !(s.top_p > 0 && s.top_p <= 1) ||
      s.top_k < 0)
    fuzz::finding(fmt::format("accepted sampler temperature {} top_p {} top_k {}", s.temperature,
                              s.top_p, s.top_k));
  try {
    s.validate();  // the scheduler builds its Sampler from it, outside any try
  } catch (const Error& e) {
    fuzz::finding(fmt::format("an accepted sampler does not validate: {}", e.what()));
  }
  if (r.stop.size() > 4) fuzz::finding(fmt::format("accepted {} stop strings", r.stop.size()));
  for (const auto& st : r.stop)
    if (st.empty()) fuzz::finding("an accepted stop string is empty");
  if (r.chat && r.echo) fuzz::finding("a chat request accepted echo");
}

void parse_one(const std::string& body, bool chat, const Tokenizer* tok,
               const serve::ChatTemplate* tmpl = nullptr) {
  const auto lim = limits();
  try {
    check_accepted(serve::parse_request(body, chat, tok, lim, tmpl), lim);
  } catch (const ApiError& e) {
    if (e.status != 400 || e.code.empty()) fuzz::finding(fmt::format("ApiError {}", e.status));
  } catch (const Error&) {
    // The tokenizer's own answer to text it cannot encode.
  } catch (const std::exception& e) {
    fuzz::finding(
        fmt::format("{} body: {} escaped validation", chat ? "chat" : "completions", e.what()));
  }
}

void check_utf8(const std::string& s) {
  const std::string v = serve::valid_utf8(s);
  try {
    (void)nlohmann::json(v).dump();  // throws on ill-formed UTF-8
  } catch (const std::exception& e) {
    fuzz::finding(fmt::format("valid_utf8 output is not UTF-8: {}", e.what()));
  }
  if (serve::valid_utf8(v) != v) fuzz::finding("valid_utf8 is not idempotent");
  if (serve::utf8_complete(s) > s.size()) fuzz::finding("utf8_complete past the end");
  if (serve::utf8_complete(v) != v.size()) fuzz::finding("utf8_complete cuts valid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using nlohmann::json;
  fuzz::maybe_write_seeds(
      {json{{"prompt", "Hello"}, {"max_tokens", 8}, {"temperature", 0}}.dump(),
       json{{"prompt", {{1, 2, 3}, {4, 5}}},
            {"max_tokens", 2},
            {"logprobs", 3},
            {"echo", true},
            {"stop", {"\n", "."}},
            {"seed", -7}}
           .dump(),
       json{{"model", "m"},
            {"messages", {{{"role", "user"}, {"content", "hi"}}}},
            {"max_completion_tokens", 4},
            {"logprobs", true},
            {"top_logprobs", 2},
            {"top_p", 0.5},
            {"top_k", 10},
            {"stream", true},
            {"session", "s"}}
           .dump(),
       R"({"prompt": ["a", [256, 0]], "n": 1.0, "max_tokens": null, "ignore_eos": true})",
       "\xef\xbf\xbd\xc3\x28\xe2\x82\xf0\x9f\x98"});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto byte_tok = make_tokenizer("byte");
  static const auto chatml = serve::ChatTemplate::from_config(
      {{"chat_template",
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] | trim + "
        "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% endif %}"}},
      "fuzz");
  if (!chatml.is_model()) fuzz::finding("the ChatML template is refused: " + chatml.reason());
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {false, true}) {
    parse_one(body, chat, byte_tok.get());
    parse_one(body, chat, nullptr);
  }
  parse_one(body, true, byte_tok.get(), &chatml);
  check_utf8(body);
  return 0;
}
