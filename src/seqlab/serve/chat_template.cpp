#include "seqlab/serve/chat_template.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/serve/api.h"

#include <fmt/format.h>

#include <filesystem>

namespace seqlab::serve {

using nlohmann::json;

namespace {

// The variables transformers passes: messages as given (here: role and content, the fields the
// API accepts), the special tokens, add_generation_prompt.
jinja::Json variables(const json& messages, const jinja::Json& tokens) {
  jinja::Json vars = tokens;
  jinja::Json ms = jinja::Json::array();
  for (const auto& m : messages)
    ms.push_back(
        {{"role", m["role"].get<std::string>()}, {"content", m["content"].get<std::string>()}});
  vars["messages"] = std::move(ms);
  vars["add_generation_prompt"] = true;
  return vars;
}

}  // namespace

ChatTemplate ChatTemplate::from_config(const json& config, const std::string& where) {
  ChatTemplate t;
  t.reason_ = where + " has no chat_template";
  if (!config.is_object() || !config.contains("chat_template")) return t;
  const json& ct = config["chat_template"];
  std::string source;
  t.refused_ = true;
  if (ct.is_string()) {
    source = ct.get<std::string>();
  } else if (ct.is_array()) {
    for (const auto& e : ct)
      if (e.is_object() && e.value("name", json()) == "default" && e.contains("template") &&
          e["template"].is_string())
        source = e["template"].get<std::string>();
    if (source.empty()) {
      t.reason_ = where + ": chat_template is a list without a template named 'default'";
      return t;
    }
  } else {
    t.reason_ = where + ": chat_template is neither a string nor a list";
    return t;
  }
  // Special tokens: a string, or an AddedToken object {"content": ...}.
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                           "cls_token", "mask_token"}) {
    if (!config.contains(name)) continue;
    const json& v = config[name];
    if (v.is_string())
      t.tokens_[name] = v.get<std::string>();
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
      t.tokens_[name] = v["content"].get<std::string>();
  }
  try {
    auto tmpl = std::make_shared<const jinja::Template>(source);
    try {
      tmpl->render(variables(json::array({{{"role", "user"}, {"content", "Hello"}}}), t.tokens_));
    } catch (const jinja::Error& e) {
      if (!e.raised) throw jinja::Error(std::string("on a one-message conversation: ") + e.what());
    }
    t.tmpl_ = std::move(tmpl);
    t.reason_.clear();
    t.refused_ = false;
  } catch (const std::exception& e) {  // jinja::Error; anything else would be a bug, not a crash
    t.reason_ = fmt::format("{}: chat_template refused: {}", where, e.what());
  }
  return t;
}

ChatTemplate ChatTemplate::load(const std::string& model_dir) {
  const auto path = std::filesystem::path(model_dir) / "tokenizer_config.json";
  ChatTemplate t;
  if (!std::filesystem::exists(path)) return t;
  json config;
  try {
    config = json::parse(read_file(path.string()));
  } catch (const std::exception& e) {
    t.reason_ = fmt::format("{}: {}", path.string(), e.what());
    t.refused_ = true;
    return t;
  }
  return from_config(config, path.string());
}

std::string ChatTemplate::apply(const json& messages) const {
  if (!tmpl_) return plain_chat_prompt(messages);
  check_messages(messages);
  try {
    return tmpl_->render(variables(messages, tokens_));
  } catch (const jinja::Error& e) {
    if (e.raised) throw bad_request(e.what(), "messages");
    throw bad_request(std::string("the model's chat template failed: ") + e.what(), "messages");
  }
}

}  // namespace seqlab::serve
