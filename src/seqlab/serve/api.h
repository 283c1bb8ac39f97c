// The OpenAI-compatible request and response bodies: JSON is read here, once, into typed structs
// (CompletionRequest), and every bad field is an ApiError naming it (HTTP 400, OpenAI's
// {"error": {"message", "type", "code"}}).
//
// Chat template (docs/serve.md): the model's own where its tokenizer_config.json has one that
// serve/chat_template.h accepts, else the plain one: each message becomes "<role>: <content>\n"
// and the prompt ends with "assistant:"; the reply's text is what follows.
#pragma once

#include "seqlab/serve/chat_template.h"
#include "seqlab/serve/scheduler.h"
#include "seqlab/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace seqlab::serve {

// An error a client gets back: status, OpenAI's type and code, and the message.
struct ApiError : std::runtime_error {
  int status;
  std::string type, code;
  ApiError(int status, std::string type, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), type(std::move(type)), code(std::move(code)) {}
};
// 400 invalid_request_error with the given code (e.g. "invalid_value", the field's name).
ApiError bad_request(const std::string& message, const std::string& code = "invalid_value");
nlohmann::json error_body(int status, const std::string& type, const std::string& code,
                          const std::string& message);

// What the server accepts, checked while parsing.
struct Limits {
  int64_t max_prompt_tokens = 8192;
  int64_t max_output_tokens = 4096;
  int64_t max_sequence = -1;  // the model's (Scheduler::max_sequence()); -1 = unbounded
  int64_t vocab_size = 0;
  int64_t max_logprobs = 20;
};

struct CompletionRequest {
  bool chat = false;
  std::string model;                          // "" = the served model
  std::vector<std::vector<int64_t>> prompts;  // one per choice (an array of prompts)
  std::vector<std::string> stop;              // up to 4 strings, none empty
  bool stream = false, echo = false, ignore_eos = false;
  GenParams gen;  // max_tokens, sampler, logprobs, session (eos and deadline: the server's)
};

// Parses a /v1/completions (chat = false) or /v1/chat/completions body. tok may be null (a model
// without a tokenizer takes token-id prompts only). A chat prompt comes from `chat_template`
// (null: the plain one); a model's own template's text is encoded as transformers encodes it,
// without the tokenizer's post-processor (the template writes bos_token itself).
CompletionRequest parse_request(const std::string& body, bool chat, const Tokenizer* tok,
                                const Limits& lim, const ChatTemplate* chat_template = nullptr);

// A 400 unless messages is a non-empty array of {role, content} with string values.
void check_messages(const nlohmann::json& messages);
// The plain chat template applied to messages [{role, content}].
std::string plain_chat_prompt(const nlohmann::json& messages);

// The longest prefix of s that ends on a UTF-8 character boundary (streams never split one).
size_t utf8_complete(const std::string& s);
// s with every byte that is not part of a well-formed UTF-8 character replaced by U+FFFD (what
// JSON output does anyway; done first where distinct byte strings must stay distinct keys).
std::string valid_utf8(const std::string& s);

}  // namespace seqlab::serve
