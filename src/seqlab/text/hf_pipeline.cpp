#include "seqlab/text/hf_pipeline.h"

#include "seqlab/text/bpe_merge.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/hf_unicode.h"
#include "seqlab/text/pretokenize.h"

#include <algorithm>

namespace seqlab::hf {
namespace {

// The code point that ends just before byte `pos` (pos > 0): the longest valid UTF-8 sequence
// ending there, else the single byte (an invalid unit).
Utf8Char prev_char(std::string_view s, size_t pos) {
  for (size_t k = 2; k <= 4 && k <= pos; ++k) {
    const Utf8Char c = decode_utf8(s, pos - k);
    if (c.valid && c.len == k) return c;
  }
  const Utf8Char c = decode_utf8(s, pos - 1);
  return c.valid && c.len == 1 ? c : Utf8Char{kInvalidByte, 1, false};
}

bool unit_is(const Utf8Char& c, bool (*pred)(char32_t)) {
  return c.valid && pred(c.cp);
}

bool is_numeric(char32_t c) {
  return in_categories(c, kNumberMask);
}

// Rust's is_ascii_punctuation || is_punctuation (category P).
bool is_punctuation(char32_t c) {
  if (c < 128) {
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
  }
  return in_categories(c, kPunctuationMask);
}

// One span per code point that satisfies pred.
std::vector<std::pair<size_t, size_t>> char_spans(std::string_view text, bool (*pred)(char32_t)) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = decode_utf8(text, i);
    if (c.valid && pred(c.cp)) spans.emplace_back(i, i + c.len);
    i += c.len;
  }
  return spans;
}

std::vector<std::pair<size_t, size_t>> literal_spans(std::string_view text, std::string_view lit) {
  std::vector<std::pair<size_t, size_t>> spans;
  if (lit.empty()) return spans;
  for (size_t i = text.find(lit); i != std::string_view::npos; i = text.find(lit, i)) {
    spans.emplace_back(i, i + lit.size());
    i += lit.size();
  }
  return spans;
}

std::vector<std::pair<size_t, size_t>> regex_spans(std::string_view text, const Regex& re) {
  std::vector<uint32_t> offsets;
  const std::u32string units = to_units(text, &offsets);
  std::vector<std::pair<size_t, size_t>> spans;
  for (const auto& [b, e] : re.find_all(units)) spans.emplace_back(offsets[b], offsets[e]);
  return spans;
}

void byte_level_step(const PreStep& s, std::string_view piece, std::vector<std::string>* out) {
  std::string text;
  if (s.add_prefix_space && (piece.empty() || piece[0] != ' ')) {
    text.reserve(piece.size() + 1);
    text.push_back(' ');
  }
  text.append(piece);
  if (!s.use_regex) {
    if (!text.empty()) out->push_back(std::move(text));
    return;
  }
  Pretokenizer it(text);  // GPT-2's pattern, written out by hand (pretokenize.h)
  std::string_view p;
  while (it.next(&p)) out->emplace_back(p);
}

void apply_step(const PreStep& s, std::string_view piece, std::vector<std::string>* out) {
  switch (s.kind) {
    case PreStep::kByteLevel:
      byte_level_step(s, piece, out);
      return;
    case PreStep::kSplit:
      split_by_matches(piece,
                       s.regex ? regex_spans(piece, *s.regex) : literal_spans(piece, s.literal),
                       s.behavior, s.invert, out);
      return;
    case PreStep::kDigits:
      split_by_matches(piece, char_spans(piece, is_numeric),
                       s.individual_digits ? Behavior::kIsolated : Behavior::kContiguous, false,
                       out);
      return;
    case PreStep::kPunctuation:
      split_by_matches(piece, char_spans(piece, is_punctuation), s.behavior, false, out);
      return;
  }
}

}  // namespace

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (Step step : steps) s = step == kNfc ? nfc(s) : nfd(s);
  return s;
}

void split_by_matches(std::string_view text, const std::vector<std::pair<size_t, size_t>>& spans,
                      Behavior behavior, bool invert, std::vector<std::string>* out) {
  // The text as alternating pieces (offsets, is_match), covering it (Pattern::find_matches).
  struct Part {
    size_t b, e;
    bool match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const auto& [b, e] : spans) {
    if (prev != b) parts.push_back({prev, b, invert});
    parts.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != text.size()) parts.push_back({prev, text.size(), invert});
  // (offsets, remove) per behavior (NormalizedString::split).
  std::vector<Part> keep;
  bool previous = false;
  switch (behavior) {
    case Behavior::kIsolated:
      for (const auto& p : parts) keep.push_back({p.b, p.e, false});
      break;
    case Behavior::kRemoved:
      keep = parts;
      break;
    case Behavior::kContiguous:
      for (const auto& p : parts) {
        if (p.match == previous && !keep.empty())
          keep.back().e = p.e;
        else
          keep.push_back({p.b, p.e, false});
        previous = p.match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const auto& p : parts) {
        if (p.match && !previous && !keep.empty())
          keep.back().e = p.e;
        else
          keep.push_back({p.b, p.e, false});
        previous = p.match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->match && !previous && !keep.empty())
          keep.back().b = it->b;
        else
          keep.push_back({it->b, it->e, false});
        previous = it->match;
      }
      std::reverse(keep.begin(), keep.end());
      break;
  }
  for (const auto& p : keep)
    if (!p.match && p.e > p.b) out->emplace_back(text.substr(p.b, p.e - p.b));
}

std::vector<std::string> PreTokenizer::apply(std::string_view text) const {
  std::vector<std::string> pieces, next;
  if (!text.empty()) pieces.emplace_back(text);
  bool mapped = false;  // a ByteLevel step ran: later steps see GPT-2's byte table spelling
  for (const PreStep& s : steps) {
    next.clear();
    for (const std::string& piece : pieces) {
      if (!mapped || s.kind == PreStep::kByteLevel) {
        apply_step(s, piece, &next);
        continue;
      }
      std::vector<std::string> sub;
      apply_step(s, bytes_to_token_string(piece), &sub);
      for (std::string& t : sub) {
        std::string bytes;
        token_string_to_bytes(t, &bytes);  // pieces end on character boundaries: always spelled
        next.push_back(std::move(bytes));
      }
    }
    pieces.swap(next);
    if (s.kind == PreStep::kByteLevel) mapped = true;
  }
  return pieces;
}

// ---- Added tokens.

void AddedTokenMatcher::build(const std::vector<AddedToken>& tokens, const std::vector<bool>& use) {
  tokens_ = &tokens;
  edges_.clear();
  ends_.assign(1, -1);
  first_.fill(false);
  n_patterns_ = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& s = tokens[t].content;
    if (!use[t] || s.empty()) continue;
    int32_t node = 0;
    for (unsigned char b : s) {
      const uint64_t k = (static_cast<uint64_t>(node) << 8) | b;
      auto it = edges_.find(k);
      if (it == edges_.end()) {
        it = edges_.emplace(k, static_cast<int32_t>(ends_.size())).first;
        ends_.push_back(-1);
      }
      node = it->second;
    }
    if (ends_[node] < 0) ends_[node] = static_cast<int32_t>(t);  // the first of equal contents
    first_[static_cast<unsigned char>(s[0])] = true;
    ++n_patterns_;
  }
}

std::vector<AddedTokenMatcher::Piece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Piece> pieces;
  const size_t n = text.size();
  size_t start_offset = 0, from = 0;
  while (from < n) {
    // The leftmost position where a token starts, and the longest token there.
    size_t ms = n, me = 0;
    int32_t tok = -1;
    for (size_t s = from; s < n && tok < 0; ++s) {
      if (!first_[static_cast<unsigned char>(text[s])]) continue;
      int32_t node = 0;
      for (size_t i = s; i < n; ++i) {
        const auto it =
            edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
        if (it == edges_.end()) break;
        node = it->second;
        if (ends_[node] >= 0) {
          tok = ends_[node];
          ms = s;
          me = i + 1;
        }
      }
    }
    if (tok < 0) break;
    from = me;
    const AddedToken& t = (*tokens_)[tok];
    size_t start = ms, stop = me;
    if (t.single_word) {
      const bool word_before = start > 0 && unit_is(prev_char(text, start), is_word_char);
      const bool word_after = stop < n && unit_is(decode_utf8(text, stop), is_word_char);
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      while (start > start_offset) {
        const Utf8Char c = prev_char(text, start);
        if (!unit_is(c, is_white_space) || start - c.len < start_offset) break;
        start -= c.len;
      }
    }
    if (t.rstrip) {
      while (stop < n) {
        const Utf8Char c = decode_utf8(text, stop);
        if (!unit_is(c, is_white_space)) break;
        stop += c.len;
      }
      from = stop;
    }
    if (start_offset < start) pieces.push_back({start_offset, start, -1});
    pieces.push_back({start, stop, tok});
    start_offset = stop;
  }
  if (start_offset < n) pieces.push_back({start_offset, n, -1});
  return pieces;
}

// ---- BPE.

BpeModel::BpeModel(const Config& cfg, const std::string& source)
    : fuse_unk_(cfg.fuse_unk), ignore_merges_(cfg.ignore_merges) {
  vocab_.reserve(cfg.vocab.size() * 2);
  by_bytes_.reserve(cfg.vocab.size() * 2);
  std::string bytes;
  for (const auto& [token, id] : cfg.vocab) {
    vocab_.emplace(token, static_cast<int32_t>(id));
    if (token_string_to_bytes(token, &bytes)) by_bytes_.emplace(bytes, static_cast<int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = by_bytes_.find(std::string(1, static_cast<char>(b)));
    byte_ids_[b] = it == by_bytes_.end() ? -1 : it->second;
  }
  ranks_.reserve(cfg.merges.size() * 2);
  const auto shown = [](const std::string& s) {
    return s.size() <= 40 ? s : s.substr(0, 40) + "...";
  };
  for (size_t r = 0; r < cfg.merges.size(); ++r) {
    const auto& [a, b] = cfg.merges[r];
    const auto ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
    SEQLAB_CHECK(ia != vocab_.end(), "{}: model.merges[{}]: '{}' is not in model.vocab", source, r,
                 shown(a));
    SEQLAB_CHECK(ib != vocab_.end(), "{}: model.merges[{}]: '{}' is not in model.vocab", source, r,
                 shown(b));
    SEQLAB_CHECK(im != vocab_.end(),
                 "{}: model.merges[{}]: the merge result '{}' is not in model.vocab", source, r,
                 shown(a + b));
    ranks_[key(ia->second, ib->second)] = {static_cast<int32_t>(r), im->second};
  }
  if (!cfg.unk_token.empty()) {
    // A missing unk token is an error only when a byte needs it (as in the Rust library): in a
    // byte-level vocabulary with all 256 bytes, never.
    const auto it = vocab_.find(cfg.unk_token);
    if (it != vocab_.end()) {
      unk_ = it->second;
    } else {
      unk_missing_ = fmt::format("{}: model.unk_token '{}' is not in model.vocab", source,
                                 shown(cfg.unk_token));
    }
  }
}

int64_t BpeModel::token_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

std::vector<int32_t> BpeModel::merge(std::string_view piece) const {
  // The initial symbols: one per byte. A byte without a token becomes unk (fused with a preceding
  // unk when fuse_unk), or is dropped when there is no unk token, as the Rust library does.
  std::vector<int32_t> id;
  id.reserve(piece.size());
  for (unsigned char b : piece) {
    const int32_t t = byte_ids_[b];
    if (t >= 0) {
      id.push_back(t);
    } else if (!unk_missing_.empty()) {
      fail("{} (needed for byte 0x{:02x})", unk_missing_, b);
    } else if (unk_ >= 0 && !(fuse_unk_ && !id.empty() && id.back() == unk_)) {
      id.push_back(unk_);
    }
  }
  return bpe_merge(std::move(id), [&](int32_t a, int32_t b) -> std::optional<BpeMerge> {
    const auto r = ranks_.find(key(a, b));
    if (r == ranks_.end()) return std::nullopt;
    return BpeMerge{r->second.rank, r->second.result};
  });
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int64_t>* out) const {
  if (ignore_merges_) {
    const auto it = by_bytes_.find(std::string(piece));
    if (it != by_bytes_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  if (piece.size() == 1 && byte_ids_[static_cast<unsigned char>(piece[0])] >= 0) {
    out->push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= kCachePieceMax;
  std::string key;
  if (cacheable) {
    key.assign(piece);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto hit = cache_.find(key);
    if (hit != cache_.end()) {
      out->insert(out->end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = merge(piece);
  out->insert(out->end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheMax) cache_.clear();
    cache_.emplace(std::move(key), std::move(ids));
  }
}

}  // namespace seqlab::hf
