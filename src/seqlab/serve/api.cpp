#include "seqlab/serve/api.h"

#include "seqlab/text/hf_tokenizer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace seqlab::serve {

using nlohmann::json;

ApiError bad_request(const std::string& message, const std::string& code) {
  return ApiError(400, "invalid_request_error", code, message);
}

json error_body(int status, const std::string& type, const std::string& code,
                const std::string& message) {
  return {{"error", {{"message", message}, {"type", type}, {"code", code}, {"status", status}}}};
}

namespace {

// A client's value as an error message shows it: a scalar as JSON, cut to 60 bytes, and an array
// or object by its kind only. Dumping a container recurses once per level, and a 1 MiB body nests
// half a million levels deep: enough to overflow a handler thread's stack (found by
// fuzz/fuzz_serve_request.cpp).
std::string shown(const json& v) {
  if (v.is_array()) return fmt::format("an array of {} elements", v.size());
  if (v.is_object()) return fmt::format("an object of {} fields", v.size());
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kMax = 60;
  if (s.size() > kMax) {
    s.resize(utf8_complete(s.substr(0, kMax)));
    s += "...";
  }
  return s;
}

// Typed readers: a present field of the wrong type or range is a 400 naming it.
int64_t get_int(const json& b, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!b.contains(key) || b[key].is_null()) return def;
  const auto& v = b[key];
  // Integral doubles (1.0) are accepted, as OpenAI's server does.
  if (v.is_number_float() && std::isfinite(v.get<double>()) &&
      v.get<double>() == std::floor(v.get<double>()) && std::fabs(v.get<double>()) < 9e15) {
    const auto i = static_cast<int64_t>(v.get<double>());
    if (i >= lo && i <= hi) return i;
  }
  if (v.is_number_integer()) {
    const bool neg = v.is_number_unsigned() ? false : v.get<int64_t>() < 0;
    if (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(hi)) {
      const int64_t i = neg ? v.get<int64_t>() : static_cast<int64_t>(v.get<uint64_t>());
      if (i >= lo && i <= hi) return i;
    }
  }
  throw bad_request(
      fmt::format("'{}' must be an integer in [{}, {}], got {}", key, lo, hi, shown(v)), key);
}

double get_num(const json& b, const char* key, double def, double lo, double hi) {
  if (!b.contains(key) || b[key].is_null()) return def;
  const auto& v = b[key];
  if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= lo &&
      v.get<double>() <= hi)
    return v.get<double>();
  throw bad_request(fmt::format("'{}' must be a number in [{}, {}], got {}", key, lo, hi, shown(v)),
                    key);
}

bool get_bool(const json& b, const char* key, bool def) {
  if (!b.contains(key) || b[key].is_null()) return def;
  if (!b[key].is_boolean())
    throw bad_request(fmt::format("'{}' must be a boolean, got {}", key, shown(b[key])), key);
  return b[key].get<bool>();
}

std::string get_str(const json& b, const char* key) {
  if (!b.contains(key) || b[key].is_null()) return "";
  if (!b[key].is_string())
    throw bad_request(fmt::format("'{}' must be a string, got {}", key, shown(b[key])), key);
  return b[key].get<std::string>();
}

std::vector<int64_t> token_ids(const json& a, int64_t V) {
  std::vector<int64_t> ids;
  for (const auto& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= V ||
        (t.is_number_unsigned() && t.get<uint64_t>() >= static_cast<uint64_t>(V)))
      throw bad_request(fmt::format("prompt token {} is not an id in [0, {})", shown(t), V),
                        "prompt");
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

std::vector<int64_t> encode(const Tokenizer* tok, const std::string& text) {
  if (!tok)
    throw bad_request("this model has no tokenizer: give the prompt as token ids", "prompt");
  return tok->encode(text);
}

// prompt: "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
std::vector<std::vector<int64_t>> read_prompts(const json& p, const Tokenizer* tok, int64_t V) {
  if (p.is_string()) return {encode(tok, p.get<std::string>())};
  if (!p.is_array() || p.empty())
    throw bad_request("'prompt' must be a string, an array of strings, or token ids", "prompt");
  if (p[0].is_number()) return {token_ids(p, V)};
  std::vector<std::vector<int64_t>> out;
  for (const auto& e : p) {
    if (e.is_string())
      out.push_back(encode(tok, e.get<std::string>()));
    else if (e.is_array())
      out.push_back(token_ids(e, V));
    else
      throw bad_request("'prompt' must be a string, an array of strings, or token ids", "prompt");
  }
  return out;
}

std::vector<std::string> read_stop(const json& b) {
  if (!b.contains("stop") || b["stop"].is_null()) return {};
  const auto& s = b["stop"];
  if (s.is_string()) {
    if (s.get<std::string>().empty()) return {};
    return {s.get<std::string>()};
  }
  if (!s.is_array() || s.size() > 4)
    throw bad_request("'stop' must be a string or an array of up to 4 strings", "stop");
  std::vector<std::string> out;
  for (const auto& e : s) {
    if (!e.is_string()) throw bad_request("'stop' entries must be strings", "stop");
    if (!e.get<std::string>().empty()) out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

void check_messages(const json& messages) {
  if (!messages.is_array() || messages.empty())
    throw bad_request("'messages' must be a non-empty array", "messages");
  for (const auto& m : messages)
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw bad_request("each message needs a string 'role' and a string 'content'", "messages");
}

std::string plain_chat_prompt(const json& messages) {
  check_messages(messages);
  std::string text;
  for (const auto& m : messages)
    text += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
  return text + "assistant:";
}

namespace {

// A model template's prompt: special-token text (bos_token, <|im_start|>, ...) is read as those
// tokens and the post-processor adds nothing, as transformers' apply_chat_template(tokenize=True).
std::vector<int64_t> encode_chat(const Tokenizer* tok, const std::string& text) {
  if (const auto* hf = dynamic_cast<const HfTokenizer*>(tok))
    return hf->encode(text, HfEncodeOptions{false, false});
  return encode(tok, text);
}

}  // namespace

CompletionRequest parse_request(const std::string& body, bool chat, const Tokenizer* tok,
                                const Limits& lim, const ChatTemplate* chat_template) {
  json b;
  try {
    b = json::parse(body);
  } catch (const std::exception& e) {
    throw bad_request(std::string("the body is not valid JSON: ") + e.what(), "invalid_json");
  }
  if (!b.is_object()) throw bad_request("the body must be a JSON object", "invalid_json");
  CompletionRequest r;
  r.chat = chat;
  r.model = get_str(b, "model");
  if (chat) {
    if (!b.contains("messages")) throw bad_request("'messages' is required", "messages");
    if (chat_template && chat_template->is_model())
      r.prompts = {encode_chat(tok, chat_template->apply(b["messages"]))};
    else
      r.prompts = {encode(tok, plain_chat_prompt(b["messages"]))};
  } else {
    if (!b.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
    r.prompts = read_prompts(b["prompt"], tok, lim.vocab_size);
  }
  const int64_t n = get_int(b, "n", 1, 1, std::numeric_limits<int64_t>::max());
  if (n != 1) throw bad_request("only n = 1 is supported", "n");
  auto& g = r.gen;
  const char* max_key =
      chat && b.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  g.max_tokens =
      get_int(b, max_key, std::min<int64_t>(16, lim.max_output_tokens), 0, lim.max_output_tokens);
  g.sampler.temperature = get_num(b, "temperature", 1.0, 0.0, 100.0);
  g.sampler.top_p = get_num(b, "top_p", 1.0, 0.0, 1.0);
  if (g.sampler.top_p == 0.0) g.sampler.top_p = 1e-9;  // the most probable token only
  g.sampler.top_k = get_int(b, "top_k", 0, 0, std::numeric_limits<int32_t>::max());
  g.sampler.seed = static_cast<uint64_t>(get_int(b, "seed", 0, std::numeric_limits<int64_t>::min(),
                                                 std::numeric_limits<int64_t>::max()));
  r.stream = get_bool(b, "stream", false);
  r.echo = chat ? false : get_bool(b, "echo", false);
  r.ignore_eos = get_bool(b, "ignore_eos", false);
  r.stop = read_stop(b);
  g.session = get_str(b, "session");
  if (chat) {
    if (get_bool(b, "logprobs", false))
      g.logprobs = get_int(b, "top_logprobs", 0, 0, lim.max_logprobs);
  } else if (b.contains("logprobs") && !b["logprobs"].is_boolean()) {
    g.logprobs = get_int(b, "logprobs", -1, 0, lim.max_logprobs);
  } else if (get_bool(b, "logprobs", false)) {
    g.logprobs = 0;
  }
  g.echo = r.echo;
  for (const auto& p : r.prompts) {
    if (p.empty()) throw bad_request("the prompt is empty (it has no tokens)", "prompt");
    if (static_cast<int64_t>(p.size()) > lim.max_prompt_tokens)
      throw bad_request(fmt::format("the prompt has {} tokens, more than this server's limit of {}",
                                    p.size(), lim.max_prompt_tokens),
                        "context_length_exceeded");
    if (lim.max_sequence >= 0 && static_cast<int64_t>(p.size()) >= lim.max_sequence)
      throw bad_request(fmt::format("the prompt has {} tokens; this model reads at most {}",
                                    p.size(), lim.max_sequence),
                        "context_length_exceeded");
  }
  return r;
}

size_t utf8_complete(const std::string& s) {
  // Step back over at most 3 continuation bytes to the last lead byte; keep it only if its
  // sequence is complete.
  size_t n = s.size(), i = n;
  int back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return n;
  const auto lead = static_cast<unsigned char>(s[i - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return (need == 1 || n - (i - 1) >= need) ? n : i - 1;
}

std::string valid_utf8(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xC2) && !(c > 0xF4);
    for (size_t j = 1; ok && j < n; ++j) ok = (static_cast<unsigned char>(s[i + j]) & 0xC0) == 0x80;
    if (ok && n == 3) {  // no overlong forms, no surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += 1;
    }
  }
  return out;
}

}  // namespace seqlab::serve
