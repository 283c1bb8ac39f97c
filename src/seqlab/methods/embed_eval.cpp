#include "seqlab/methods/embed_eval.h"

#include "seqlab/core/error.h"
#include "seqlab/methods/calibration.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace seqlab {

namespace {

constexpr uint64_t kEvalSeed = 0x5eed0def5e47ULL;  // queries and pairs: the same for every model

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x.to(torch::kDouble),
                                          torch::nn::functional::NormalizeFuncOptions().dim(1));
}

}  // namespace

torch::Tensor cosine_rows(const torch::Tensor& a, const torch::Tensor& b) {
  return (unit_rows(a) * unit_rows(b)).sum(1);  // [N]
}

torch::Tensor cosine_matrix(const torch::Tensor& a, const torch::Tensor& b) {
  return unit_rows(a).matmul(unit_rows(b).t());  // [Q,C]
}

RankMetrics rank_metrics(const torch::Tensor& scores, const std::vector<std::vector<int64_t>>& gold,
                         int64_t k) {
  SEQLAB_CHECK(scores.dim() == 2 && scores.size(0) == static_cast<int64_t>(gold.size()),
               "rank_metrics: scores [Q,C] with Q = {} gold lists, got {}", gold.size(),
               c10::str(scores.sizes()));
  RankMetrics m;
  auto s = scores.to(torch::kDouble).contiguous();
  const int64_t C = s.size(1);
  for (size_t q = 0; q < gold.size(); ++q) {
    SEQLAB_CHECK(!gold[q].empty(), "rank_metrics: query {} has no gold candidate", q);
    const double* row = s.data_ptr<double>() + q * C;
    std::vector<char> is_gold(C, 0);
    double best = -std::numeric_limits<double>::infinity();
    for (auto g : gold[q]) {
      SEQLAB_CHECK(g >= 0 && g < C, "rank_metrics: gold {} outside [0, {})", g, C);
      is_gold[g] = 1;
      best = std::max(best, row[g]);
    }
    int64_t rank = 1;
    for (int64_t c = 0; c < C; ++c)
      if (!is_gold[c] && row[c] >= best) ++rank;
    m.mrr += 1.0 / static_cast<double>(rank);
    m.recall += rank <= k ? 1.0 : 0.0;
  }
  m.queries = static_cast<int64_t>(gold.size());
  if (m.queries > 0) {
    m.mrr /= m.queries;
    m.recall /= m.queries;
  }
  return m;
}

Isotropy isotropy(const torch::Tensor& E) {
  SEQLAB_CHECK(E.dim() == 2 && E.size(0) >= 2, "isotropy needs [N >= 2, D], got {}",
               c10::str(E.sizes()));
  auto X = E.to(torch::kDouble);
  const double N = static_cast<double>(X.size(0));
  Isotropy r;
  auto U = unit_rows(X);
  auto sum = U.sum(0);  // sum_ij cos = |sum_i u_i|^2, minus the N diagonal ones
  r.mean_cos = (sum.dot(sum).item<double>() - N) / (N * (N - 1));
  auto [ev, vecs] = torch::linalg::eigh(X.t().matmul(X), "L");  // columns: eigenvectors of E^T E
  auto proj = X.matmul(torch::cat({vecs, -vecs}, 1));           // [N, 2D]: c . e_i
  auto logz = torch::logsumexp(proj, 0);                        // [2D]
  r.partition = std::exp((logz.min() - logz.max()).item<double>());
  auto C = X - X.mean(0, true);
  auto var = torch::linalg::eigvalsh(C.t().matmul(C), "L");  // ascending
  const double total = var.sum().item<double>();
  r.top_pc = total > 0 ? var[-1].item<double>() / total : 0.0;
  return r;
}

Split eval_split_of(const Dictionary& d, int32_t s) {
  if (!d.heldout_synset(s)) return Split::train;
  for (auto i : d.synset_entries(s))
    if (d.entries()[i].split == Split::test) return Split::test;
  return Split::valid;
}

namespace {

void check_eval_split(Split split, const char* what) {
  SEQLAB_CHECK(split == Split::valid || split == Split::test,
               "{}: evaluation split must be valid or test", what);
}

}  // namespace

ReverseDictSet reverse_dictionary_set(const Dictionary& d, int64_t max_queries, Split split) {
  check_eval_split(split, "reverse dictionary");
  ReverseDictSet rd;
  std::map<int32_t, int64_t> cand;  // entry -> candidate index
  for (auto i : d.split_entries(split)) {
    cand[i] = static_cast<int64_t>(rd.candidates.size());
    rd.candidates.push_back(d.entries()[i].word);
  }
  SEQLAB_CHECK(!rd.candidates.empty(), "reverse dictionary: the dictionary has no {} entries",
               split_name(split));
  std::vector<int32_t> synsets;
  for (size_t s = 0; s < d.wordnet().synsets().size(); ++s) {
    if (eval_split_of(d, static_cast<int32_t>(s)) != split) continue;
    for (auto i : d.synset_entries(static_cast<int32_t>(s)))
      if (cand.count(i)) {
        synsets.push_back(static_cast<int32_t>(s));
        break;
      }
  }
  SEQLAB_CHECK(!synsets.empty(), "reverse dictionary: no held-out definition has a {} entry",
               split_name(split));
  std::mt19937_64 rng(kEvalSeed + (split == Split::valid ? 2 : 0));
  std::shuffle(synsets.begin(), synsets.end(), rng);
  if (max_queries > 0 && static_cast<int64_t>(synsets.size()) > max_queries)
    synsets.resize(static_cast<size_t>(max_queries));
  for (auto s : synsets) {
    rd.queries.push_back(d.definition(s));
    std::vector<int64_t> g;
    for (auto i : d.synset_entries(s))
      if (cand.count(i)) g.push_back(cand[i]);
    rd.gold.push_back(g);
  }
  return rd;
}

SimilaritySet similarity_set(const Dictionary& d, const WuPalmer& wp, int64_t n_pairs,
                             Split split) {
  check_eval_split(split, "similarity pairs");
  const auto& ss = d.wordnet().synsets();
  std::vector<int32_t> pool;
  std::map<int, std::vector<int32_t>> by_lex;
  for (size_t s = 0; s < ss.size(); ++s)
    if (ss[s].pos == 'n' && eval_split_of(d, static_cast<int32_t>(s)) == split) {
      pool.push_back(static_cast<int32_t>(s));
      by_lex[ss[s].lex_filenum].push_back(static_cast<int32_t>(s));
    }
  SEQLAB_CHECK(pool.size() >= 2, "similarity pairs: fewer than 2 held-out noun definitions");
  std::mt19937_64 rng(kEvalSeed + (split == Split::valid ? 3 : 1));
  auto pick = [&](const std::vector<int32_t>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  SimilaritySet out;
  std::set<std::pair<int32_t, int32_t>> seen;
  for (int64_t tries = 0; static_cast<int64_t>(out.wup.size()) < n_pairs && tries < 20 * n_pairs;
       ++tries) {
    const int32_t a = pick(pool);
    const bool same_lex = out.wup.size() % 2 == 1;
    const auto& from = same_lex ? by_lex[ss[a].lex_filenum] : pool;
    const int32_t b = pick(from);
    if (a == b || !seen.insert({std::min(a, b), std::max(a, b)}).second) continue;
    const auto w = wp.similarity(a, b);
    if (!w) continue;
    out.a.push_back(d.definition(a));
    out.b.push_back(d.definition(b));
    out.wup.push_back(*w);
  }
  SEQLAB_CHECK(out.wup.size() >= 3, "similarity pairs: only {} pairs found", out.wup.size());
  return out;
}

EmbedEval evaluate_embeddings(const Encoder& e, const ReverseDictSet& rd, const SimilaritySet& sim,
                              int64_t batch) {
  EmbedEval r;
  auto q = e.embed(rd.queries, batch);     // [Q,D]
  auto c = e.embed(rd.candidates, batch);  // [C,D]
  r.retrieval = rank_metrics(cosine_matrix(q, c), rd.gold, 10);
  r.candidates = static_cast<int64_t>(rd.candidates.size());
  auto a = e.embed(sim.a, batch), b = e.embed(sim.b, batch);  // [P,D]
  r.spearman = spearman(cosine_rows(a, b), torch::tensor(sim.wup, torch::kDouble));
  r.pairs = static_cast<int64_t>(sim.wup.size());
  r.iso = isotropy(q);
  return r;
}

}  // namespace seqlab
