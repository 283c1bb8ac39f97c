// Measuring sentence embeddings with WordNet (text/dictionary.h).
//
// Held-out definitions (synsets none of whose lemmas is a train entry) fall into two disjoint
// evaluation splits: test, a synset with at least one test entry; valid, the others (every lemma
// a valid entry). Settings are chosen on valid and reported on test (issue 36).
//
// Reverse dictionary (retrieval): the queries are the split's held-out definitions; the
// candidates are every entry of the split (valid or test), each embedded from its own word
// ("domestic dog") by the same encoder; a query's gold entries are its synset's entries of that
// split. Candidates are ranked by cosine. rank = 1 + the number
// of non-gold candidates scoring at least the best gold one (ties count against the query);
// MRR = mean 1/rank, recall@k = share of queries with rank <= k.
//
// Similarity (a proxy for STS, not STS): pairs of the split's held-out noun definitions, half drawn
// at random
// and half from the same lexicographer file (noun.animal, ...) so the range of similarities is
// covered; the score is the Spearman correlation between the cosine of the two definitions'
// embeddings and the Wu–Palmer similarity of their synsets.
//
// Isotropy of the embeddings of the retrieval queries:
//   mean_cos      the mean cosine over all pairs i != j (0 for an isotropic cloud; near 1 when
//                 every vector points one way, as in untrained or MLM encoders)
//   partition     I = min_c Z(c) / max_c Z(c), Z(c) = sum_i exp(c . e_i), over c = +-the
//                 eigenvectors of E^T E (Mu & Viswanath 2018, after Arora et al. 2016); 1 when
//                 isotropic. Computed in log space. Depends on the scale of e (used as is).
//   top_pc        the share of the variance (of the centred rows) along the first principal
//                 direction; 1/D when isotropic.
//
// Query and pair selection use a fixed seed of their own, so every model is measured on the same
// queries and pairs.
#pragma once

#include "seqlab/text/dictionary.h"
#include "seqlab/methods/encoder.h"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace seqlab {

struct RankMetrics {
  double mrr = 0, recall = 0;  // recall@k
  int64_t queries = 0;
};
// scores [Q,C]; gold[q] the candidate indices that count as right for query q (non-empty).
RankMetrics rank_metrics(const torch::Tensor& scores, const std::vector<std::vector<int64_t>>& gold,
                         int64_t k = 10);

struct Isotropy {
  double mean_cos = 0, partition = 0, top_pc = 0;
};
// E [N,D] with N >= 2.
Isotropy isotropy(const torch::Tensor& E);

// Cosine similarity of matching rows: a [N,D], b [N,D] -> [N]; of all pairs: [Q,D] x [C,D] ->
// [Q,C].
torch::Tensor cosine_rows(const torch::Tensor& a, const torch::Tensor& b);
torch::Tensor cosine_matrix(const torch::Tensor& a, const torch::Tensor& b);

struct ReverseDictSet {
  std::vector<std::string> queries;        // definitions
  std::vector<std::string> candidates;     // entry words
  std::vector<std::vector<int64_t>> gold;  // per query, indices into candidates
};
// The evaluation split of synset s: Split::test or Split::valid for a held-out definition
// (above), Split::train otherwise.
Split eval_split_of(const Dictionary& d, int32_t s);

// At most max_queries queries (0 = all), chosen by a fixed shuffle. split: valid or test.
ReverseDictSet reverse_dictionary_set(const Dictionary& d, int64_t max_queries,
                                      Split split = Split::test);

struct SimilaritySet {
  std::vector<std::string> a, b;  // definitions
  std::vector<double> wup;        // Wu–Palmer similarity of their synsets
};
SimilaritySet similarity_set(const Dictionary& d, const WuPalmer& wp, int64_t n_pairs,
                             Split split = Split::test);

struct EmbedEvalOptions {
  int64_t max_queries = 1000;
  int64_t n_pairs = 2000;
  int64_t batch = 64;
};
struct EmbedEval {
  RankMetrics retrieval;  // recall@10
  int64_t candidates = 0;
  double spearman = 0;
  int64_t pairs = 0;
  Isotropy iso;
};
EmbedEval evaluate_embeddings(const Encoder& e, const ReverseDictSet& rd, const SimilaritySet& sim,
                              int64_t batch = 64);

}  // namespace seqlab
