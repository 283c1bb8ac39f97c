#include "seqlab/serve/session_cache.h"

namespace seqlab::serve {

std::vector<uint64_t> prefix_hashes(const std::vector<int64_t>& tokens) {
  std::vector<uint64_t> h(tokens.size() + 1);
  h[0] = 1469598103934665603ULL;
  for (size_t i = 0; i < tokens.size(); ++i)
    h[i + 1] = (h[i] ^ static_cast<uint64_t>(tokens[i] + 1)) * 1099511628211ULL;
  return h;
}

namespace {

bool is_prefix(const std::vector<int64_t>& p, const std::vector<int64_t>& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

}  // namespace

std::optional<SessionCache::Hit> SessionCache::lookup(const std::vector<int64_t>& tokens,
                                                      const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto hit = [&](Iter it) {
    touch(it);
    return Hit{it->state, static_cast<int64_t>(it->tokens.size())};
  };
  if (!session.empty()) {
    auto s = by_session_.find(session);
    if (s != by_session_.end() && s->second->tokens.size() < tokens.size() &&
        is_prefix(s->second->tokens, tokens))
      return hit(s->second);
  }
  if (tokens.empty()) return std::nullopt;
  const auto h = prefix_hashes(tokens);
  for (size_t n = tokens.size() - 1; n >= 1; --n) {
    auto range = by_hash_.equal_range(h[n]);
    for (auto e = range.first; e != range.second; ++e)
      if (e->second->tokens.size() == n && is_prefix(e->second->tokens, tokens))
        return hit(e->second);
  }
  return std::nullopt;
}

void SessionCache::erase(Iter it) {
  auto range = by_hash_.equal_range(it->hash);
  for (auto e = range.first; e != range.second; ++e)
    if (e->second == it) {
      by_hash_.erase(e);
      break;
    }
  if (!it->session.empty()) by_session_.erase(it->session);
  bytes_ -= it->bytes;
  lru_.erase(it);
}

void SessionCache::insert(std::vector<int64_t> tokens, infer::DecoderState state,
                          const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t cost = static_cast<int64_t>(state.data.size() * sizeof(float) +
                                            tokens.size() * sizeof(int64_t) + session.size()) +
                       kEntryOverhead;
  const uint64_t hash = prefix_hashes(tokens).back();
  // The same sequence or the same session replaces its old entry.
  auto range = by_hash_.equal_range(hash);
  for (auto e = range.first; e != range.second; ++e)
    if (e->second->tokens == tokens) {
      erase(e->second);
      break;
    }
  if (!session.empty() && by_session_.count(session)) erase(by_session_.at(session));
  if (tokens.empty() || cost > budget_) return;
  while (bytes_ + cost > budget_ && !lru_.empty()) {
    erase(std::prev(lru_.end()));
    ++evictions_;
  }
  lru_.push_front(Entry{std::move(tokens), std::move(state), session, hash, cost});
  by_hash_.emplace(hash, lru_.begin());
  if (!session.empty()) by_session_[session] = lru_.begin();
  bytes_ += cost;
}

int64_t SessionCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t SessionCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(lru_.size());
}

int64_t SessionCache::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace seqlab::serve
