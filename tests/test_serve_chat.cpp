// POST /v1/chat/completions with the model's own chat template, over real sockets: a model
// directory whose tokenizer_config.json has a chat_template answers a chat exactly as
// /v1/completions answers the prompt rendered by hand from that template (greedy, the same
// tokens); a refused template falls back to the plain one; raise_exception is the client's 400;
// and a Hugging Face checkpoint imported with its tokenizer files (tests/data/hf/llama) serves with
// its template. /v1/models says which template is in use.
#include "seqlab/core/atomic_file.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/serve/api.h"
#include "seqlab/serve/server.h"

#include "hf_testing.h"
#include "serve_testing.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

namespace fs = std::filesystem;

// A copy of the tiny byte-level model with `tokenizer_config` beside it.
std::string model_with_config(const std::string& name, const json& tokenizer_config) {
  const auto dir =
      fs::temp_directory_path() / ("seqlab_serve_chat_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::copy(make_model("t2r"), dir, fs::copy_options::recursive);
  write_file_atomic((dir / "tokenizer_config.json").string(), tokenizer_config.dump());
  return dir.string();
}

json chat(const json& messages, int max_tokens) {
  return {
      {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

std::string template_in_use(const Running& srv) {
  auto r = srv.client().Get("/v1/models");
  if (!r) return "(no answer)";
  return json::parse(r->body)["data"][0].value("chat_template", "(none)");
}

// The chat's reply equals the completion of `prompt`, token for token.
void expect_chat_is_completion(const Running& srv, const json& messages, const std::string& prompt,
                               int max_tokens) {
  const auto c = srv.post("/v1/chat/completions", chat(messages, max_tokens).dump());
  ASSERT_EQ(c.first, 200) << c.second.dump();
  const auto p = srv.post("/v1/completions", greedy(prompt, max_tokens).dump());
  ASSERT_EQ(p.first, 200) << p.second.dump();
  EXPECT_EQ(c.second["choices"][0]["message"]["content"], p.second["choices"][0]["text"]);
  EXPECT_EQ(c.second["usage"]["prompt_tokens"], p.second["usage"]["prompt_tokens"]);
  EXPECT_EQ(c.second["usage"]["completion_tokens"], max_tokens);
}

const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}\n"
    "  {% if m.role == 'tool' %}{{ raise_exception('no tools here: ' ~ m.content) }}{% endif %}\n"
    "<|{{ m.role }}|>{{ m.content | trim }}\n"
    "{% endfor %}\n"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

}  // namespace

TEST(ServeChat, ModelTemplateGivesItsPrompt) {
  const auto dir = model_with_config(
      "model", {{"chat_template", kTemplate}, {"bos_token", {{"content", "<s>"}}}});
  Running srv(dir, serve::ServeConfig{});
  EXPECT_EQ(template_in_use(srv), "tokenizer_config.json");
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "  Hi there  "}}});
  // By hand: the indented tag line goes (lstrip_blocks, trim_blocks), the content is trimmed.
  const std::string rendered = "<s><|system|>Be brief.\n<|user|>Hi there\n<|assistant|>";
  expect_chat_is_completion(srv, messages, rendered, 12);
  // The plain template's prompt is another one: the template is what made the match.
  const auto plain =
      srv.post("/v1/completions", greedy(serve::plain_chat_prompt(messages), 1).dump());
  const auto templ = srv.post("/v1/completions", greedy(rendered, 1).dump());
  EXPECT_NE(plain.second["usage"]["prompt_tokens"], templ.second["usage"]["prompt_tokens"]);

  const auto r = srv.post("/v1/chat/completions",
                          chat(json::array({{{"role", "tool"}, {"content", "ls"}}}), 4).dump());
  EXPECT_EQ(r.first, 400) << r.second.dump();
  EXPECT_EQ(r.second["error"]["message"], "no tools here: ls");
  EXPECT_EQ(r.second["error"]["code"], "messages");
  // A streamed chat renders the same prompt.
  auto body = chat(messages, 12);
  body["stream"] = true;
  auto s = srv.client().Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(s);
  std::string streamed;
  size_t at = 0;
  while ((at = s->body.find("data: {", at)) != std::string::npos) {
    const size_t end = s->body.find("\n\n", at);
    const auto j = json::parse(s->body.substr(at + 6, end - at - 6));
    streamed += j["choices"][0]["delta"].value("content", "");
    at = end;
  }
  const auto whole = srv.post("/v1/chat/completions", chat(messages, 12).dump());
  EXPECT_EQ(streamed, whole.second["choices"][0]["message"]["content"]);
  fs::remove_all(dir);
}

TEST(ServeChat, RefusedTemplateFallsBackToPlain) {
  const auto dir = model_with_config(
      "refused", {{"chat_template", "{{ messages | map(attribute='content') | join }}"}});
  Running srv(dir, serve::ServeConfig{});
  EXPECT_EQ(template_in_use(srv), "plain");
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  expect_chat_is_completion(srv, messages, "user: Hi\nassistant:", 8);
  fs::remove_all(dir);
}

TEST(ServeChat, NoTokenizerConfigIsPlain) {
  Running srv(make_model("t2r"), serve::ServeConfig{});
  EXPECT_EQ(template_in_use(srv), "plain");
}

TEST(ServeChat, ImportedHubCheckpointUsesItsTemplate) {
  // The hub-layout Llama fixture with a chat template added to its tokenizer_config.json, imported
  // as `seqlab import-hf` does (which copies tokenizer.json and tokenizer_config.json).
  const auto hf_dir = hf_copy("llama", "llama_chat");
  auto config = hf_read_json(hf_dir + "/tokenizer_config.json");
  config["chat_template"] =
      "{% for m in messages %}{{ '<' + m['role'] + '>' + m['content'] + '\\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<assistant>' }}{% endif %}";
  write_file_atomic(hf_dir + "/tokenizer_config.json", config.dump());
  const auto model_dir = hf_tmp("llama_chat_model");
  import_hf(hf_dir, model_dir);
  Running srv(model_dir, serve::ServeConfig{});
  EXPECT_EQ(template_in_use(srv), "tokenizer_config.json");
  expect_chat_is_completion(srv, json::array({{{"role", "user"}, {"content", "Hi"}}}),
                            "<user>Hi\n<assistant>", 6);
  fs::remove_all(hf_scratch());
}
