#include "seqlab/text/hf_tokenizer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/hf_pipeline.h"
#include "seqlab/text/hf_tokenizer_impl.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <unordered_map>

namespace seqlab {

using nlohmann::json;

namespace {

constexpr const char* kNotSupported =
    "seqlab reads byte-level BPE tokenizer.json files; SentencePiece/Unigram models such as "
    "Llama 2's are not supported";

// Field access that names the file and the field in errors.
struct Reader {
  const std::string& source;

  [[noreturn]] void bad(const std::string& path, const std::string& what) const {
    fail("{}: {}: {}", source, path, what);
  }
  const json* get(const json& obj, const char* key) const {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  bool boolean(const json& obj, const char* key, bool dflt, const std::string& path) const {
    const json* v = get(obj, key);
    if (!v) return dflt;
    if (!v->is_boolean())
      bad(path + "." + key, "expected true or false, got " + json_for_message(*v));
    return v->get<bool>();
  }
  std::string string(const json& obj, const char* key, const std::string& path,
                     const char* dflt = nullptr) const {
    const json* v = get(obj, key);
    if (!v && dflt) return dflt;
    if (!v) bad(path + "." + key, "missing");
    if (!v->is_string()) bad(path + "." + key, "expected a string, got " + json_for_message(*v));
    return v->get<std::string>();
  }
  const json& array(const json& obj, const char* key, const std::string& path) const {
    const json* v = get(obj, key);
    if (!v) bad(path + "." + key, "missing");
    if (!v->is_array()) bad(path + "." + key, "expected an array, got " + json_for_message(*v));
    return *v;
  }
  int64_t id(const json& v, const std::string& path) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      bad(path, "expected a token id (a non-negative integer), got " + json_for_message(v));
    return v.get<int64_t>();
  }
  std::string type(const json& v, const std::string& path) const {
    if (!v.is_object()) bad(path, "expected an object, got " + json_for_message(v));
    return string(v, "type", path);
  }
};

json parse_or_fail(std::string_view text, const std::string& source) {
  try {
    return parse_json(text, source);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed JSON: {}", source, e.what());
  }
}

// Whether the pre-tokenizer has a ByteLevel step (directly or in a Sequence).
bool has_byte_level(const json& pre) {
  if (!pre.is_object()) return false;
  const auto t = pre.find("type");
  if (t == pre.end() || !t->is_string()) return false;
  if (*t == "ByteLevel") return true;
  const auto seq = pre.find("pretokenizers");
  if (*t != "Sequence" || seq == pre.end() || !seq->is_array()) return false;
  return std::any_of(seq->begin(), seq->end(), [](const json& p) { return has_byte_level(p); });
}

void check_model_kind(const Reader& r, const json& root) {
  const json* model = r.get(root, "model");
  if (!model) r.bad("model", "missing");
  const std::string type = r.type(*model, "model");
  if (type != "BPE")
    fail("{}: model.type '{}' is not supported ({})", r.source, type, kNotSupported);
  const json* pre = r.get(root, "pre_tokenizer");
  if (!pre || !has_byte_level(*pre))
    fail(
        "{}: not a byte-level BPE: the pre_tokenizer has no ByteLevel step ({}; nor are "
        "SentencePiece-style BPE files such as Gemma's)",
        r.source, kNotSupported);
  const json* dec = r.get(root, "decoder");
  const std::string dec_type = dec ? r.type(*dec, "decoder") : "null";
  if (dec_type != "ByteLevel")
    fail("{}: not a byte-level BPE: the decoder is {}, not ByteLevel ({})", r.source,
         dec ? "'" + dec_type + "'" : "null", kNotSupported);
}

hf::BpeModel::Config read_model(const Reader& r, const json& m) {
  hf::BpeModel::Config cfg;
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!r.string(m, k, "model", "").empty())
      r.bad(std::string("model.") + k, "a non-empty value is not supported (not a byte-level BPE)");
  }
  if (r.boolean(m, "byte_fallback", false, "model"))
    r.bad("model.byte_fallback", "true is not supported (a SentencePiece-style BPE)");
  if (const json* d = r.get(m, "dropout"); d && !(d->is_number() && d->get<double>() == 0))
    r.bad("model.dropout", "BPE dropout (random segmentation) is not supported");
  cfg.unk_token = r.string(m, "unk_token", "model", "");
  cfg.fuse_unk = r.boolean(m, "fuse_unk", false, "model");
  cfg.ignore_merges = r.boolean(m, "ignore_merges", false, "model");
  const json* vocab = r.get(m, "vocab");
  if (!vocab || !vocab->is_object())
    r.bad("model.vocab", vocab ? "expected an object mapping tokens to ids" : "missing");
  cfg.vocab.reserve(vocab->size());
  for (const auto& [token, v] : vocab->items())
    cfg.vocab.emplace_back(token, r.id(v, "model.vocab['" + token.substr(0, 40) + "']"));
  const json& merges = r.array(m, "merges", "model");
  cfg.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& e = merges[i];
    const std::string path = "model.merges[" + std::to_string(i) + "]";
    if (e.is_string()) {
      const std::string& s = e.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos || sp == 0 ||
          sp + 1 == s.size())
        r.bad(path, "expected two tokens separated by one space, got " + json_for_message(e));
      cfg.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      cfg.merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    } else {
      r.bad(path, "expected \"a b\" or [\"a\", \"b\"], got " + json_for_message(e));
    }
  }
  return cfg;
}

std::vector<hf::AddedToken> read_added_tokens(const Reader& r, const json& root) {
  std::vector<hf::AddedToken> out;
  const json* a = r.get(root, "added_tokens");
  if (!a) return out;
  if (!a->is_array()) r.bad("added_tokens", "expected an array, got " + json_for_message(*a));
  for (size_t i = 0; i < a->size(); ++i) {
    const json& t = (*a)[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) r.bad(path, "expected an object, got " + json_for_message(t));
    hf::AddedToken tok;
    const json* id = r.get(t, "id");
    if (!id) r.bad(path + ".id", "missing");
    tok.id = r.id(*id, path + ".id");
    tok.content = r.string(t, "content", path);
    tok.special = r.boolean(t, "special", false, path);
    tok.single_word = r.boolean(t, "single_word", false, path);
    tok.lstrip = r.boolean(t, "lstrip", false, path);
    tok.rstrip = r.boolean(t, "rstrip", false, path);
    tok.normalized = r.boolean(t, "normalized", !tok.special, path);
    if (tok.content.empty()) continue;  // the Rust library ignores empty tokens
    out.push_back(std::move(tok));
  }
  return out;
}

void read_normalizer(const Reader& r, const json& n, const std::string& path, hf::Normalizer* out) {
  const std::string type = r.type(n, path);
  if (type == "NFC") {
    out->steps.push_back(hf::Normalizer::kNfc);
  } else if (type == "NFD") {
    out->steps.push_back(hf::Normalizer::kNfd);
  } else if (type == "Sequence") {
    const json& list = r.array(n, "normalizers", path);
    for (size_t i = 0; i < list.size(); ++i)
      read_normalizer(r, list[i], path + ".normalizers[" + std::to_string(i) + "]", out);
  } else {
    r.bad(path + ".type", "the normalizer '" + type +
                              "' is not supported (seqlab supports null, NFC, NFD and a Sequence "
                              "of them)");
  }
}

hf::Behavior read_behavior(const Reader& r, const json& s, const std::string& path) {
  const std::string b = r.string(s, "behavior", path, "Isolated");
  if (b == "Removed") return hf::Behavior::kRemoved;
  if (b == "Isolated") return hf::Behavior::kIsolated;
  if (b == "MergedWithPrevious") return hf::Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return hf::Behavior::kMergedWithNext;
  if (b == "Contiguous") return hf::Behavior::kContiguous;
  r.bad(path + ".behavior", "unknown split behavior '" + b + "'");
}

void read_pre_tokenizer(const Reader& r, const json& p, const std::string& path,
                        hf::PreTokenizer* out) {
  const std::string type = r.type(p, path);
  hf::PreStep step;
  if (type == "Sequence") {
    const json& list = r.array(p, "pretokenizers", path);
    for (size_t i = 0; i < list.size(); ++i)
      read_pre_tokenizer(r, list[i], path + ".pretokenizers[" + std::to_string(i) + "]", out);
    return;
  } else if (type == "ByteLevel") {
    for (const auto& s : out->steps)
      if (s.kind == hf::PreStep::kByteLevel) r.bad(path, "a second ByteLevel step");
    step.kind = hf::PreStep::kByteLevel;
    step.add_prefix_space = r.boolean(p, "add_prefix_space", false, path);
    step.use_regex = r.boolean(p, "use_regex", true, path);
  } else if (type == "Split") {
    step.kind = hf::PreStep::kSplit;
    const json* pat = r.get(p, "pattern");
    if (!pat || !pat->is_object())
      r.bad(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    if (r.get(*pat, "Regex")) {
      const std::string where = r.source + ": " + path + ".pattern.Regex";
      step.regex = std::make_shared<hf::Regex>(r.string(*pat, "Regex", path + ".pattern"), where);
    } else {
      step.literal = r.string(*pat, "String", path + ".pattern");
    }
    step.behavior = read_behavior(r, p, path);
    step.invert = r.boolean(p, "invert", false, path);
  } else if (type == "Digits") {
    step.kind = hf::PreStep::kDigits;
    step.individual_digits = r.boolean(p, "individual_digits", false, path);
  } else if (type == "Punctuation") {
    step.kind = hf::PreStep::kPunctuation;
    step.behavior = read_behavior(r, p, path);
  } else {
    r.bad(path + ".type", "the pre-tokenizer '" + type +
                              "' is not supported (seqlab supports ByteLevel, Split, Digits, "
                              "Punctuation and a Sequence of them)");
  }
  out->steps.push_back(std::move(step));
}

// The ids a post-processor adds around one sequence.
void read_post_processor(const Reader& r, const json& p, const std::string& path,
                         hf::PostProcessor* out) {
  const std::string type = r.type(p, path);
  hf::PostProcessor mine;
  if (type == "Sequence") {
    const json& list = r.array(p, "processors", path);
    for (size_t i = 0; i < list.size(); ++i)
      read_post_processor(r, list[i], path + ".processors[" + std::to_string(i) + "]", out);
    return;
  } else if (type == "ByteLevel") {
    return;  // offsets only
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* k : {"cls", "sep"}) {
      const json* v = r.get(p, k);
      if (!v || !v->is_array() || v->size() != 2) r.bad(path + "." + k, "expected [token, id]");
      (std::string(k) == "cls" ? mine.prefix : mine.suffix)
          .push_back(r.id((*v)[1], path + "." + k + "[1]"));
    }
  } else if (type == "TemplateProcessing") {
    const json& single = r.array(p, "single", path);
    const json* specials = r.get(p, "special_tokens");
    bool seen_a = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string ip = path + ".single[" + std::to_string(i) + "]";
      if (const json* seq = r.get(single[i], "Sequence")) {
        const std::string which = r.string(*seq, "id", ip + ".Sequence");
        if (which != "A" || seen_a)
          r.bad(ip, "the single-sequence template must hold sequence A exactly once");
        seen_a = true;
      } else if (const json* st = r.get(single[i], "SpecialToken")) {
        const std::string name = r.string(*st, "id", ip + ".SpecialToken");
        const json* entry = specials ? r.get(*specials, name.c_str()) : nullptr;
        if (!entry) r.bad(ip, "special token '" + name + "' is not in " + path + ".special_tokens");
        const json& ids = r.array(*entry, "ids", path + ".special_tokens['" + name + "']");
        for (const json& id : ids) (seen_a ? mine.suffix : mine.prefix).push_back(r.id(id, ip));
      } else {
        r.bad(ip, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    if (!seen_a) r.bad(path + ".single", "the template has no sequence A");
  } else {
    r.bad(path + ".type", "the post-processor '" + type +
                              "' is not supported (seqlab supports TemplateProcessing, "
                              "RobertaProcessing, BertProcessing, ByteLevel and a Sequence of "
                              "them)");
  }
  // Applied after the ones before it: this one's tokens go around theirs.
  out->prefix.insert(out->prefix.begin(), mine.prefix.begin(), mine.prefix.end());
  out->suffix.insert(out->suffix.end(), mine.suffix.begin(), mine.suffix.end());
}

// The id tables: decoded bytes, special flags and vocab_size; template ids checked.
void build_tables(const Reader& r, const hf::BpeModel::Config& cfg, HfTokenizer::Impl* t) {
  int64_t max_id = -1;
  for (const auto& [tok, id] : cfg.vocab) max_id = std::max(max_id, id);
  for (const auto& a : t->added) max_id = std::max(max_id, a.id);
  const auto entries = static_cast<int64_t>(cfg.vocab.size() + t->added.size());
  // Vocabularies are dense; a far larger id would only allocate a huge empty table.
  if (max_id >= 4 * entries + 1024)
    r.bad("model.vocab", fmt::format("the id {} is far beyond the {} entries", max_id, entries));
  t->vocab_size = max_id + 1;
  t->decoded.assign(t->vocab_size, std::string());
  t->special.assign(t->vocab_size, 0);
  std::vector<uint8_t> owned(t->vocab_size, 0);
  std::string bytes;
  const auto spelled = [&](const std::string& token) {
    // The ByteLevel decoder: the bytes the characters stand for, or the token's own text.
    return token_string_to_bytes(token, &bytes) ? bytes : token;
  };
  for (const auto& [tok, id] : cfg.vocab) {
    if (owned[id]) r.bad("model.vocab", fmt::format("two tokens share the id {}", id));
    owned[id] = 1;
    t->decoded[id] = spelled(tok);
  }
  for (const auto& a : t->added) {
    // An added token decodes to its content as written (transformers and the JavaScript port
    // keep added tokens out of the ByteLevel decoder), whatever the model's vocabulary says.
    t->decoded[a.id] = a.content;
    t->special[a.id] = a.special;
    t->added_ids[a.content] = a.id;
  }
  for (const auto* list : {&t->post.prefix, &t->post.suffix})
    for (int64_t id : *list)
      if (id >= t->vocab_size)
        r.bad("post_processor", fmt::format("the id {} is not in the vocabulary", id));
}

void build_matchers(HfTokenizer::Impl* t) {
  t->added_normalized = t->added;
  for (auto& a : t->added_normalized)
    if (a.normalized) a.content = t->normalizer.apply(a.content);
  const size_t n = t->added.size();
  std::vector<bool> raw_all(n), raw_plain(n), norm_all(n), norm_plain(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& a = t->added[i];
    raw_all[i] = !a.normalized;
    raw_plain[i] = !a.normalized && !a.special;
    norm_all[i] = a.normalized;
    norm_plain[i] = a.normalized && !a.special;
  }
  t->raw_all.build(t->added, raw_all);
  t->raw_plain.build(t->added, raw_plain);
  t->norm_all.build(t->added_normalized, norm_all);
  t->norm_plain.build(t->added_normalized, norm_plain);
}

int64_t lookup_token(const HfTokenizer::Impl& t, const std::string& token) {
  const auto it = t.added_ids.find(token);
  if (it != t.added_ids.end()) return it->second;
  return t.model->token_id(token);
}

// tokenizer_config.json's bos_token and eos_token; eos falls back to a conventional name.
void read_config(std::string_view text, const std::string& source, HfTokenizer::Impl* t) {
  namespace fs = std::filesystem;
  const std::string cfg_source =
      (fs::path(source).parent_path() / "tokenizer_config.json").string();
  const json c = text.empty() ? json::object() : parse_or_fail(text, cfg_source);
  if (!c.is_object()) fail("{}: expected a JSON object", cfg_source);
  const auto name = [&](const char* key) -> std::string {
    const auto it = c.find(key);
    if (it == c.end() || it->is_null()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
      return (*it)["content"].get<std::string>();
    fail("{}: {}: expected a string or {{\"content\": ...}}, got {}", cfg_source, key,
         json_for_message(*it));
  };
  const std::string bos = name("bos_token"), eos = name("eos_token");
  if (!bos.empty()) t->bos = lookup_token(*t, bos);
  if (!eos.empty()) {
    t->eos = lookup_token(*t, eos);
    if (t->eos < 0)
      t->eos_error =
          fmt::format("{}: eos_token '{}' is not a token of {}", cfg_source, eos, source);
    return;
  }
  for (const char* conventional : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"}) {
    t->eos = lookup_token(*t, conventional);
    if (t->eos >= 0) return;
  }
  t->eos_error = fmt::format(
      "{}: no end-of-text token ({}, and no token is <|endoftext|>, <|end_of_text|>, </s> or "
      "<eos>)",
      source,
      text.empty() ? "no tokenizer_config.json beside it" : cfg_source + " names no eos_token");
}

}  // namespace

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;

std::string hf_tokenizer_file(const std::string& path) {
  namespace fs = std::filesystem;
  return fs::is_directory(path) ? (fs::path(path) / "tokenizer.json").string() : path;
}

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::string& path, const std::string& spec) {
  namespace fs = std::filesystem;
  const std::string file = hf_tokenizer_file(path);
  SEQLAB_CHECK(fs::is_regular_file(file), "{}: no such file{}", file,
               fs::is_directory(path) ? " (the directory has no tokenizer.json)" : "");
  const fs::path config = fs::path(file).parent_path() / "tokenizer_config.json";
  std::string config_text;
  if (fs::is_regular_file(config)) config_text = read_file(config.string());
  return from_texts(read_file(file), config_text, file, spec);
}

}  // namespace seqlab

namespace seqlab {

std::unique_ptr<HfTokenizer> HfTokenizer::from_texts(std::string_view tokenizer_json,
                                                     std::string_view config_json,
                                                     const std::string& source,
                                                     const std::string& spec) {
  auto t = std::make_unique<Impl>();
  t->spec = spec;
  t->source = source;
  const Reader r{t->source};
  const json root = parse_or_fail(tokenizer_json, source);
  if (!root.is_object()) fail("{}: expected a JSON object (a tokenizer.json)", source);
  check_model_kind(r, root);
  const hf::BpeModel::Config cfg = read_model(r, root.at("model"));
  t->added = read_added_tokens(r, root);
  if (const json* n = r.get(root, "normalizer"))
    read_normalizer(r, *n, "normalizer", &t->normalizer);
  read_pre_tokenizer(r, root.at("pre_tokenizer"), "pre_tokenizer", &t->pre);
  if (const json* p = r.get(root, "post_processor"))
    read_post_processor(r, *p, "post_processor", &t->post);
  build_tables(r, cfg, t.get());
  t->model = std::make_unique<hf::BpeModel>(cfg, source);
  build_matchers(t.get());
  read_config(config_json, source, t.get());
  return std::unique_ptr<HfTokenizer>(new HfTokenizer(std::move(t)));
}

int64_t HfTokenizer::token_id(const std::string& token) const {
  return lookup_token(*impl_, token);
}

}  // namespace seqlab
