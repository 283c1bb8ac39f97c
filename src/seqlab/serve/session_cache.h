// The session cache: finished requests' decoder states, keyed by the token sequence each state has
// consumed, so that a later prompt extending a cached sequence starts from that state and prefills
// only its new tokens (llama.cpp's prompt cache; for a recurrent model each entry is a few KiB
// whatever the conversation's length, for softmax attention it is the KV cache at its used length).
// The scheduler keeps states packed (infer::FastModel::pack_state: a softmax KV cache cut to the
// positions it has written) and unpacks a hit; an entry's bytes are the packed state's.
//
// Bounded by a byte budget with least-recently-used eviction. An entry costs its state's floats,
// its tokens and a fixed overhead (kEntryOverhead); one larger than the whole budget is not kept.
// An entry may also carry a session name (the request's `session` field): a session keeps one
// entry, replaced by its next request's, and a lookup naming it tries it first.
//
// Lookup is O(n) hash probes for an n-token prompt (a rolling hash of every prefix) plus one
// comparison of the matched tokens. Thread-safe (one mutex).
#pragma once

#include "seqlab/infer/fast_model.h"

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace seqlab::serve {

class SessionCache {
 public:
  static constexpr int64_t kEntryOverhead = 128;  // bytes of bookkeeping per entry (estimate)

  explicit SessionCache(int64_t budget_bytes) : budget_(budget_bytes) {}

  struct Hit {
    infer::DecoderState state;  // a copy; the entry stays cached
    int64_t tokens = 0;         // how many of the prompt's first tokens it has consumed
  };
  // The entry whose tokens are the longest proper prefix of `tokens` (at least one token is left
  // to prefill, which gives the next-token logits), the named session's first; marks it used.
  std::optional<Hit> lookup(const std::vector<int64_t>& tokens, const std::string& session);
  // Keeps `state` (which has consumed exactly `tokens`), replacing an entry with the same tokens
  // or the same session, then evicts least recently used entries until the budget holds.
  void insert(std::vector<int64_t> tokens, infer::DecoderState state, const std::string& session);

  int64_t bytes() const;
  int64_t size() const;
  int64_t evictions() const;
  int64_t budget() const { return budget_; }

 private:
  struct Entry {
    std::vector<int64_t> tokens;
    infer::DecoderState state;
    std::string session;
    uint64_t hash = 0;
    int64_t bytes = 0;
  };
  using Iter = std::list<Entry>::iterator;
  void erase(Iter it);
  void touch(Iter it) { lru_.splice(lru_.begin(), lru_, it); }

  int64_t budget_;
  int64_t bytes_ = 0, evictions_ = 0;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_multimap<uint64_t, Iter> by_hash_;
  std::unordered_map<std::string, Iter> by_session_;
  mutable std::mutex mu_;
};

// The rolling hash of tokens[0, n) for every n: h[n] (h[0] = the empty sequence's).
std::vector<uint64_t> prefix_hashes(const std::vector<int64_t>& tokens);

}  // namespace seqlab::serve
