#include "seqlab/text/dictionary.h"

#include "seqlab/core/error.h"

#include <algorithm>
#include <deque>
#include <map>

namespace seqlab {

namespace {

bool is_hypernym(const WordNetPointer& p) {
  return p.symbol == "@" || p.symbol == "@i";
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

std::string entry_word(const std::string& lemma) {
  std::string w = lemma;
  for (auto& c : w) {
    if (c == '_') c = ' ';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return w;
}

Dictionary::Dictionary(std::shared_ptr<const WordNet> wn, const std::string& pos)
    : wn_(std::move(wn)) {
  SEQLAB_CHECK(wn_, "dictionary: no WordNet");
  const auto& ss = wn_->synsets();
  std::map<std::string, std::vector<int32_t>> words;  // sorted by word
  for (size_t i = 0; i < ss.size(); ++i) {
    const auto& s = ss[i];
    if (pos.find(s.pos) == std::string::npos) continue;
    if (trim(s.definition()).empty()) continue;
    for (const auto& l : s.lemmas) {
      auto& v = words[entry_word(l)];
      if (v.empty() || v.back() != static_cast<int32_t>(i)) v.push_back(static_cast<int32_t>(i));
    }
  }
  SEQLAB_CHECK(!words.empty(),
               "dictionary from WordNet in {} is empty: no synset with a definition and a lemma "
               "(parts of speech '{}')",
               wn_->dir(), pos);
  by_synset_.resize(ss.size());
  for (auto& [w, syn] : words) {
    const auto id = static_cast<int32_t>(entries_.size());
    entries_.push_back({w, split_of_key(w), syn});
    index_.emplace(w, id);
    for (auto s : syn) by_synset_[s].push_back(id);
  }
}

std::vector<int32_t> Dictionary::split_entries(Split s) const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].split == s) out.push_back(static_cast<int32_t>(i));
  return out;
}

std::string Dictionary::definition(int32_t synset) const {
  return trim(wn_->synsets().at(synset).definition());
}

int32_t Dictionary::find(const std::string& word) const {
  auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

bool Dictionary::heldout_synset(int32_t synset) const {
  const auto& e = by_synset_.at(synset);
  if (e.empty()) return false;
  for (auto i : e)
    if (entries_[i].split == Split::train) return false;
  return true;
}

const std::vector<int32_t>& Dictionary::synset_entries(int32_t synset) const {
  return by_synset_.at(synset);
}

WuPalmer::WuPalmer(const WordNet& wn) : wn_(wn) {
  const auto& ss = wn.synsets();
  depth_.assign(ss.size(), 0);  // 0 = not computed yet, -1 = on the current path
  for (size_t root = 0; root < ss.size(); ++root) {
    if (depth_[root] > 0) continue;
    // Iterative post-order walk up the hypernyms: a synset's depth needs its hypernyms' depths.
    std::vector<std::pair<int32_t, size_t>> stack = {{static_cast<int32_t>(root), 0}};
    depth_[root] = -1;
    while (!stack.empty()) {
      auto& [s, next] = stack.back();
      const auto& ps = ss[s].pointers;
      while (next < ps.size()) {
        const auto& p = ps[next];
        if (is_hypernym(p) && p.index >= 0) {
          SEQLAB_CHECK(depth_[p.index] != -1, "WordNet in {}: hypernym cycle through {}", wn.dir(),
                       ss[s].offset);
          if (depth_[p.index] == 0) break;  // not computed yet: go up first
        }
        ++next;
      }
      if (next < ps.size()) {
        const int32_t h = ps[next].index;
        depth_[h] = -1;
        stack.push_back({h, 0});
        continue;
      }
      int32_t d = 1;
      for (const auto& p : ps)
        if (is_hypernym(p) && p.index >= 0) d = std::max(d, depth_[p.index] + 1);
      depth_[s] = d;
      stack.pop_back();
    }
  }
}

std::unordered_map<int32_t, int32_t> WuPalmer::ancestors(int32_t s) const {
  std::unordered_map<int32_t, int32_t> dist = {{s, 0}};
  std::deque<int32_t> q = {s};
  while (!q.empty()) {  // breadth first: the first visit is the shortest distance
    const int32_t x = q.front();
    q.pop_front();
    for (const auto& p : wn_.synsets()[x].pointers)
      if (is_hypernym(p) && p.index >= 0 && !dist.count(p.index)) {
        dist[p.index] = dist[x] + 1;
        q.push_back(p.index);
      }
  }
  return dist;
}

std::optional<double> WuPalmer::similarity(int32_t a, int32_t b) const {
  const auto da = ancestors(a), db = ancestors(b);
  std::optional<double> best;
  for (const auto& [c, ha] : da) {
    auto it = db.find(c);
    if (it == db.end()) continue;
    const double dc = depth_[c];
    const double w = 2 * dc / (ha + it->second + 2 * dc);
    if (!best || w > *best) best = w;
  }
  return best;
}

}  // namespace seqlab
