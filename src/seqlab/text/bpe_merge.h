// Byte-level BPE's merge loop, shared by the GPT-2 BPE (bpe_tokenizer.cpp) and the HF
// tokenizer.json reader (hf_pipeline.cpp): they differ only in how a pair's merge is looked up.
//
// The piece is a doubly linked list of token ids; a merge keeps the left node (its position stays
// its original offset) and unlinks the right one. Candidates are ordered by (rank, position): equal
// ranks are one pair, merged left to right as GPT-2's loop does; an entry is stale once either
// node changed and is then skipped. Equals the merge-all-occurrences loop, in O(n log n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace seqlab {

struct BpeMerge {
  int32_t rank;    // lower merges first
  int32_t result;  // the merged token's id
};

// id: the initial tokens. lookup(left, right) -> std::optional<BpeMerge>. Returns the merged ids.
template <class Lookup>
std::vector<int32_t> bpe_merge(std::vector<int32_t> id, const Lookup& lookup) {
  const auto n = static_cast<int32_t>(id.size());
  if (n < 2) return id;
  std::vector<int32_t> prev(n), next(n);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Cand {
    int32_t rank, pos, left, right, result;
  };
  const auto later = [](const Cand& x, const Cand& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::vector<Cand> heap;
  const auto candidate = [&](int32_t p) {
    const int32_t q = next[p];
    if (q < 0) return false;
    const std::optional<BpeMerge> m = lookup(id[p], id[q]);
    if (!m) return false;
    heap.push_back({m->rank, p, id[p], id[q], m->result});
    return true;
  };
  for (int32_t i = 0; i + 1 < n; ++i) candidate(i);
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Cand c = heap.back();
    heap.pop_back();
    const int32_t p = c.pos, q = next[p];
    if (id[p] != c.left || q < 0 || id[q] != c.right) continue;
    id[p] = c.result;
    id[q] = -1;
    next[p] = next[q];
    if (next[q] >= 0) prev[next[q]] = p;
    if (prev[p] >= 0 && candidate(prev[p])) std::push_heap(heap.begin(), heap.end(), later);
    if (candidate(p)) std::push_heap(heap.begin(), heap.end(), later);
  }
  std::vector<int32_t> out;
  for (int32_t p = 0; p >= 0; p = next[p]) out.push_back(id[p]);
  return out;
}

}  // namespace seqlab
