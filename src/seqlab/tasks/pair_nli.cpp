#include "seqlab/tasks/pair_nli.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"
#include "seqlab/tasks/supersense.h"

#include <algorithm>
#include <tuple>

namespace seqlab {

namespace {

// The pointers that make "A entails B": hypernym, instance hypernym, verb entailment.
bool entails_symbol(const std::string& s) {
  return s == "@" || s == "@i" || s == "*";
}

size_t pos_slot(char pos) {
  return static_cast<size_t>(wordnet_pos_class(pos));
}

}  // namespace

PairNliTask::PairNliTask(const TaskConfig& cfg) {
  tokenizer_ = make_tokenizer(cfg.tokenizer);
  wn_ = load_wordnet();
  const auto& all = wn_->synsets();
  std::vector<int32_t> e, c;
  for (size_t i = 0; i < all.size(); ++i) {
    const Synset& s = all[i];
    const auto a = static_cast<int32_t>(i);
    by_pos_[pos_slot(s.pos)].push_back(a);
    e.clear();
    c.clear();
    for (const auto& p : s.pointers) {
      if (p.index == a) continue;
      if (entails_symbol(p.symbol)) e.push_back(p.index);
      if (p.symbol == "!") c.push_back(p.index);
    }
    // Several lexical antonym pointers (one per word pair) name one synset pair once.
    for (auto* v : {&e, &c}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    const auto k = static_cast<size_t>(s.split);
    for (int32_t b : e) entail_[k].emplace_back(a, b);
    for (int32_t b : c) contra_[k].emplace_back(a, b);
  }
  for (Split s : {Split::train, Split::valid, Split::test})
    SEQLAB_CHECK(!pairs(s, kEntailment).empty() && !pairs(s, kContradiction).empty(),
                 "task pair_nli: WordNet in {} has no hypernym or no antonym pairs in its {} split",
                 wn_->dir(), split_name(s));
}

const std::vector<std::pair<int32_t, int32_t>>& PairNliTask::pairs(Split split, Label label) const {
  SEQLAB_CHECK(label != kNeutral, "pair_nli: neutral pairs are drawn, not listed");
  return (label == kEntailment ? entail_ : contra_)[static_cast<size_t>(split)];
}

bool PairNliTask::related(int32_t a, int32_t b) const {
  const auto& all = wn_->synsets();
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    for (const auto& p : all[x].pointers)
      if (p.index == y) return true;
    // Is y an ancestor of x? Walk up the entailment chains (a DAG of depth < 20).
    std::vector<int32_t> stack{x}, seen{x};
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      for (const auto& p : all[u].pointers) {
        if (!entails_symbol(p.symbol)) continue;
        if (p.index == y) return true;
        if (std::find(seen.begin(), seen.end(), p.index) != seen.end()) continue;
        seen.push_back(p.index);
        stack.push_back(p.index);
      }
    }
  }
  return false;
}

std::vector<PairNliTask::Pair> PairNliTask::draw_pairs(int64_t batch, uint64_t seed,
                                                       Split split) const {
  SEQLAB_CHECK(batch > 0, "task pair_nli: batch must be positive, got {}", batch);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = i % 3;
  for (int64_t i = batch - 1; i > 0; --i) std::swap(labels[i], labels[draw_below(rng, i + 1)]);
  const auto& ent = pairs(split, kEntailment);
  const auto& con = pairs(split, kContradiction);
  auto pick = [&](const std::vector<std::pair<int32_t, int32_t>>& v) {
    return v[draw_below(rng, static_cast<int64_t>(v.size()))];
  };
  std::vector<Pair> out(batch);
  for (int64_t i = 0; i < batch; ++i) {
    Pair& p = out[i];
    p.label = labels[i];
    if (p.label != kNeutral) {
      std::tie(p.premise, p.hypothesis) = pick(p.label == kEntailment ? ent : con);
      continue;
    }
    // A neutral pair borrows the premise of an entailment or a contradiction pair (half each, as
    // in the batch) and replaces the hypothesis by an unrelated synset of the same part of speech.
    p.premise = pick(draw_below(rng, 2) ? con : ent).first;
    const auto& cands = by_pos_[pos_slot(wn_->synsets()[p.premise].pos)];
    bool found = false;
    for (int tries = 0; tries < 1000 && !found; ++tries) {
      p.hypothesis = cands[draw_below(rng, static_cast<int64_t>(cands.size()))];
      found = p.hypothesis != p.premise && !related(p.premise, p.hypothesis);
    }
    SEQLAB_CHECK(found, "task pair_nli: no unrelated hypothesis found for synset {:08d}",
                 wn_->synsets()[p.premise].offset);
  }
  return out;
}

Batch PairNliTask::sample_split(int64_t batch, int64_t length, uint64_t seed, Split split) const {
  SEQLAB_CHECK(length >= min_length(), "task pair_nli: length {} is below the minimum {}", length,
               min_length());
  const auto drawn = draw_pairs(batch, seed, split);
  std::vector<std::vector<int64_t>> tokens(batch);
  std::vector<int64_t> targets(batch);
  const int64_t budget = length - 1;  // for premise + hypothesis
  for (int64_t i = 0; i < batch; ++i) {
    auto p = tokenizer_->encode(wn_->synsets()[drawn[i].premise].definition());
    auto h = tokenizer_->encode(wn_->synsets()[drawn[i].hypothesis].definition());
    const auto lp = static_cast<int64_t>(p.size()), lh = static_cast<int64_t>(h.size());
    int64_t keep_p = budget / 2, keep_h = budget - budget / 2;
    if (lp < keep_p) keep_h = budget - lp;
    if (lh < keep_h) keep_p = budget - lh;
    p.resize(std::min(lp, keep_p));
    h.resize(std::min(lh, keep_h));
    tokens[i] = std::move(p);
    tokens[i].push_back(sep());
    tokens[i].insert(tokens[i].end(), h.begin(), h.end());
    targets[i] = drawn[i].label;
  }
  return pack_padded_rows(tokens, targets, length, pad());
}

}  // namespace seqlab
