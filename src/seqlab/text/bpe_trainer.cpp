#include "seqlab/text/bpe_trainer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/text/pretokenize.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <unordered_map>

namespace seqlab {
namespace {

constexpr const char* kEosText = "<|endoftext|>";

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
int32_t key_left(uint64_t k) {
  return static_cast<int32_t>(k >> 32);
}
int32_t key_right(uint64_t k) {
  return static_cast<int32_t>(k & 0xFFFFFFFFu);
}

struct Word {
  std::vector<int32_t> syms;  // current tokens of the piece
  int64_t count;              // occurrences in the corpus
};

// Heap entry: a pair's count when it was pushed. Max-heap on count, then smaller key.
struct Entry {
  int64_t count;
  uint64_t key;
};
bool heap_less(const Entry& x, const Entry& y) {
  return x.count != y.count ? x.count < y.count : x.key > y.key;
}

}  // namespace

BpeModel train_bpe(const std::vector<std::string>& documents, const BpeTrainOptions& options) {
  SEQLAB_CHECK(options.vocab_size >= 257 && options.vocab_size <= (int64_t{1} << 30),
               "bpe training: vocab size {} is outside [257, 2^30] (256 bytes + <|endoftext|> at "
               "least)",
               options.vocab_size);

  // Word-frequency table over pre-tokenized pieces, in a fixed (sorted) order.
  std::unordered_map<std::string, int64_t> freq;
  for (const auto& doc : documents) {
    Pretokenizer it(doc);
    std::string_view piece;
    while (it.next(&piece)) ++freq[std::string(piece)];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(freq.begin(), freq.end());
  freq.clear();
  std::sort(sorted.begin(), sorted.end());

  BpeModel model;
  std::unordered_map<std::string, int32_t> token_id;  // bytes -> id
  for (int b = 0; b < 256; ++b) {
    model.tokens.emplace_back(1, static_cast<char>(b));
    model.byte_ids[b] = b;
    token_id.emplace(model.tokens.back(), b);
  }

  std::vector<Word> words;
  words.reserve(sorted.size());
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words;  // may list stale words
  const auto index = [&](uint64_t k, int32_t w) {
    auto& v = pair_words[k];
    if (v.empty() || v.back() != w) v.push_back(w);
  };
  for (auto& [piece, count] : sorted) {
    Word word{{}, count};
    for (unsigned char b : piece) word.syms.push_back(b);
    const auto w = static_cast<int32_t>(words.size());
    for (size_t i = 0; i + 1 < word.syms.size(); ++i) {
      const uint64_t k = pair_key(word.syms[i], word.syms[i + 1]);
      pair_count[k] += count;
      index(k, w);
    }
    words.push_back(std::move(word));
  }
  sorted.clear();
  sorted.shrink_to_fit();

  // Lazy max-heap: an entry whose count no longer matches the pair's is re-pushed with the
  // current count when it surfaces; increases push a fresh entry at once. The top entry, when it
  // matches, is therefore the true maximum.
  std::vector<Entry> heap;
  heap.reserve(pair_count.size());
  for (const auto& [k, c] : pair_count) heap.push_back({c, k});
  std::make_heap(heap.begin(), heap.end(), heap_less);
  const auto push = [&](Entry e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), heap_less);
  };

  const int64_t target = options.vocab_size - 1;  // the last id is <|endoftext|>
  std::unique_ptr<Progress> bar;
  if (options.progress) bar = std::make_unique<Progress>("bpe merges", target - 256);
  std::unordered_map<uint64_t, int64_t> delta;
  std::vector<int32_t> merged;
  while (static_cast<int64_t>(model.tokens.size()) < target && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heap_less);
    const Entry top = heap.back();
    heap.pop_back();
    auto found = pair_count.find(top.key);
    const int64_t current = found == pair_count.end() ? 0 : found->second;
    if (current != top.count) {
      if (current > 0) push({current, top.key});
      continue;
    }
    const int32_t a = key_left(top.key), b = key_right(top.key);
    std::string bytes = model.tokens[a] + model.tokens[b];
    if (bytes == kEosText) continue;  // keep that spelling for the end-of-text token
    auto [tok, is_new] = token_id.emplace(bytes, static_cast<int32_t>(model.tokens.size()));
    const int32_t c = tok->second;
    if (is_new) model.tokens.push_back(std::move(bytes));
    model.merges.push_back({a, b, c});

    // Re-spell every word that holds (a, b); count the change of each pair's total.
    std::vector<int32_t> holders = std::move(pair_words[top.key]);
    pair_words.erase(top.key);
    delta.clear();
    for (int32_t w : holders) {
      Word& word = words[w];
      auto& s = word.syms;
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; ++i) has = s[i] == a && s[i + 1] == b;
      if (!has) continue;  // a stale index entry
      for (size_t i = 0; i + 1 < s.size(); ++i) delta[pair_key(s[i], s[i + 1])] -= word.count;
      merged.clear();
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          merged.push_back(c);
          i += 2;
        } else {
          merged.push_back(s[i++]);
        }
      }
      s.assign(merged.begin(), merged.end());
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        const uint64_t k = pair_key(s[i], s[i + 1]);
        delta[k] += word.count;
        if (s[i] == c || s[i + 1] == c) index(k, w);  // other pairs were indexed already
      }
    }
    for (const auto& [k, d] : delta) {
      if (d == 0) continue;
      int64_t& count = pair_count[k];
      count += d;
      if (d > 0) push({count, k});
      if (count == 0) pair_count.erase(k);
    }
    pair_count.erase(top.key);
    if (bar) bar->update(static_cast<int64_t>(model.tokens.size()) - 256);
  }
  if (bar) bar->finish();
  if (static_cast<int64_t>(model.tokens.size()) < target)
    log_warn("bpe training: the corpus ran out of pairs at {} tokens (asked for {})",
             model.tokens.size() + 1, options.vocab_size);
  model.eos_id = static_cast<int32_t>(model.tokens.size());
  model.tokens.emplace_back(kEosText);
  return model;
}

void save_bpe(const BpeModel& model, const std::string& dir) {
  // {"token": id, ...} in id order, as HF writes it (built by hand: nlohmann's ordered_json
  // looks keys up linearly).
  std::vector<std::string> spelled(model.tokens.size());
  std::unordered_map<std::string, size_t> seen;
  std::string vocab = "{";
  for (size_t id = 0; id < model.tokens.size(); ++id) {
    spelled[id] = static_cast<int64_t>(id) == model.eos_id
                      ? std::string(kEosText)
                      : bytes_to_token_string(model.tokens[id]);
    SEQLAB_CHECK(seen.emplace(spelled[id], id).second, "save_bpe: token '{}' appears twice",
                 spelled[id]);
    if (id > 0) vocab += ", ";
    vocab += nlohmann::json(spelled[id]).dump() + ": " + std::to_string(id);
  }
  vocab += "}\n";
  std::string merges = "#version: 0.2\n";
  for (const auto& m : model.merges) merges += spelled[m.left] + " " + spelled[m.right] + "\n";
  ensure_dir(dir);
  const std::filesystem::path d(dir);
  write_file_atomic((d / "merges.txt").string(), merges);
  write_file_atomic((d / "vocab.json").string(), vocab);
}

}  // namespace seqlab
