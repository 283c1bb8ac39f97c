// The chat template a served model uses for POST /v1/chat/completions (docs/serve.md): the
// model's own, from the `chat_template` of tokenizer_config.json in its directory (a Jinja string,
// or a list of {name, template} of which "default" is taken), rendered by serve/jinja.h as
// transformers' apply_chat_template renders it with add_generation_prompt true; or, where there is
// none or it is refused, the plain template (plain_chat_prompt in serve/api.h).
//
// A template is refused at load time, with the reason logged on stderr, when it does not parse
// (malformed, or using a construct serve/jinja.h does not implement) or when it fails on a
// one-message conversation ({"role": "user", "content": "Hello"}) for any reason but its own
// raise_exception. Nothing about a template crashes the server.
#pragma once

#include "seqlab/serve/jinja.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace seqlab::serve {

class ChatTemplate {
 public:
  // The plain template.
  ChatTemplate() = default;
  // From tokenizer_config.json's parsed contents (`where` names it in messages). Never throws:
  // a refused template leaves the plain one, and reason() says why.
  static ChatTemplate from_config(const nlohmann::json& config, const std::string& where);
  // From <model_dir>/tokenizer_config.json; the plain template where there is none.
  static ChatTemplate load(const std::string& model_dir);

  // The prompt for `messages` ([{role, content}, ...], strings): a 400 ApiError (serve/api.h) for
  // bad messages or a template that fails on them (raise_exception's message as it is).
  std::string apply(const nlohmann::json& messages) const;
  // Whether the model's template is used (else the plain one).
  bool is_model() const { return tmpl_ != nullptr; }
  // "tokenizer_config.json" or "plain" (/v1/models shows it).
  std::string name() const { return tmpl_ ? "tokenizer_config.json" : "plain"; }
  // Why the model's template is not used ("" when it is).
  const std::string& reason() const { return reason_; }
  // Whether the model has a template that was refused (not merely none).
  bool refused() const { return refused_; }

 private:
  std::shared_ptr<const jinja::Template> tmpl_;
  jinja::Json tokens_ =
      jinja::Json::object();  // bos_token, eos_token, ... as the config names them
  std::string reason_ = "no tokenizer_config.json";
  bool refused_ = false;
};

}  // namespace seqlab::serve
