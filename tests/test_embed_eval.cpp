// The embedding measures: MRR / recall@k on hand-made rankings, isotropy recomputed by hand on a
// three-point cloud, and the WordNet benchmark sets (held-out queries, gold entries, pairs).
#include "seqlab/methods/embed_eval.h"

#include "seqlab/core/error.h"

#include "dictionary_testing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace seqlab;

TEST(RankMetrics, HandMadeRanking) {
  // Query 0: gold 2 is best -> rank 1. Query 1: gold {0, 3}; best gold 3 (0.5) is beaten by 1
  // (0.9) and tied by 2 (0.5, counted against) -> rank 3. Query 2: gold 1 scores lowest -> rank 4.
  auto s = torch::tensor({0.1, 0.2, 0.9, 0.3,  //
                          0.1, 0.9, 0.5, 0.5,  //
                          0.4, 0.0, 0.2, 0.3},
                         torch::kDouble)
               .view({3, 4});
  auto m = rank_metrics(s, {{2}, {0, 3}, {1}}, 2);
  EXPECT_EQ(m.queries, 3);
  EXPECT_DOUBLE_EQ(m.mrr, (1.0 + 1.0 / 3 + 1.0 / 4) / 3);
  EXPECT_DOUBLE_EQ(m.recall, 1.0 / 3);  // only query 0 within the top 2
  EXPECT_DOUBLE_EQ(rank_metrics(s, {{2}, {0, 3}, {1}}, 4).recall, 1.0);
  EXPECT_THROW(rank_metrics(s, {{2}, {}, {1}}), Error);
  EXPECT_THROW(rank_metrics(s, {{2}, {9}, {1}}), Error);
}

TEST(Isotropy, HandComputed) {
  // Rows (2,0), (0,1), (-1,0): E^T E = diag(5, 1), eigenvectors the axes.
  auto E = torch::tensor({2.0, 0.0, 0.0, 1.0, -1.0, 0.0}, torch::kDouble).view({3, 2});
  auto r = isotropy(E);
  // cosines: (2,0)-(0,1) 0; (2,0)-(-1,0) -1; (0,1)-(-1,0) 0.
  EXPECT_NEAR(r.mean_cos, -1.0 / 3, 1e-12);
  const double e = std::exp(1.0);
  const double zx = e * e + 1 + 1 / e, zmx = 1 / (e * e) + 1 + e, zy = 1 + e + 1,
               zmy = 1 + 1 / e + 1;
  const double zmin = std::min({zx, zmx, zy, zmy}), zmax = std::max({zx, zmx, zy, zmy});
  EXPECT_NEAR(r.partition, zmin / zmax, 1e-12);
  // Centred rows: mean (1/3, 1/3); scatter matrix by hand, its largest eigenvalue over the trace.
  double sxx = 0, syy = 0, sxy = 0;
  const double xs[3] = {2, 0, -1}, ys[3] = {0, 1, 0};
  for (int i = 0; i < 3; ++i) {
    const double x = xs[i] - 1.0 / 3, y = ys[i] - 1.0 / 3;
    sxx += x * x;
    syy += y * y;
    sxy += x * y;
  }
  const double tr = sxx + syy, det = sxx * syy - sxy * sxy;
  const double l1 = tr / 2 + std::sqrt(tr * tr / 4 - det);
  EXPECT_NEAR(r.top_pc, l1 / tr, 1e-12);
  // One direction only: every cosine is 1.
  auto same = torch::tensor({1.0, 2.0, 2.0, 4.0, 3.0, 6.0}, torch::kDouble).view({3, 2});
  EXPECT_NEAR(isotropy(same).mean_cos, 1.0, 1e-12);
  EXPECT_NEAR(isotropy(same).top_pc, 1.0, 1e-12);
}

TEST(Cosine, RowsAndMatrix) {
  auto a = torch::tensor({3.0, 4.0, 1.0, 0.0}, torch::kDouble).view({2, 2});
  auto b = torch::tensor({4.0, 3.0, 0.0, 2.0}, torch::kDouble).view({2, 2});
  auto r = cosine_rows(a, b);
  EXPECT_NEAR(r[0].item<double>(), 24.0 / 25, 1e-12);
  EXPECT_NEAR(r[1].item<double>(), 0.0, 1e-12);
  auto m = cosine_matrix(a, b);
  EXPECT_NEAR(m[0][1].item<double>(), 0.8, 1e-12);
  EXPECT_NEAR(m[1][0].item<double>(), 0.8, 1e-12);
}

// On real WordNet: every query is a held-out definition whose gold candidates are exactly its
// synset's test entries; pairs are held-out nouns with their Wu–Palmer similarity.
TEST(Benchmarks, RealWordNetSetsAreHeldOut) {
  if (!std::filesystem::exists(wordnet_dir() + "/data.noun"))
    GTEST_SKIP() << "no WordNet in " << wordnet_dir();
  auto wn = load_wordnet();
  Dictionary d(wn);
  auto rd = reverse_dictionary_set(d, 300);
  ASSERT_EQ(rd.queries.size(), 300u);
  std::map<std::string, int32_t> cand_entry;
  for (const auto& w : rd.candidates) {
    const auto i = d.find(w);
    ASSERT_GE(i, 0);
    EXPECT_EQ(d.entries()[i].split, Split::test) << w;
  }
  for (size_t q = 0; q < rd.queries.size(); ++q) {
    ASSERT_FALSE(rd.gold[q].empty());
    // Some synset of the first gold entry has this definition, and it is held out.
    const auto& e = d.entries()[d.find(rd.candidates[rd.gold[q][0]])];
    bool found = false;
    for (auto s : e.synsets)
      if (d.definition(s) == rd.queries[q]) found = found || d.heldout_synset(s);
    EXPECT_TRUE(found) << rd.queries[q];
  }
  // The same queries every time.
  EXPECT_EQ(reverse_dictionary_set(d, 300).queries, rd.queries);
  WuPalmer wp(*wn);
  auto sim = similarity_set(d, wp, 200);
  ASSERT_EQ(sim.wup.size(), 200u);
  for (double w : sim.wup) {
    EXPECT_GT(w, 0.0);
    EXPECT_LE(w, 1.0);
  }
}

// The valid split (for choosing settings) and the test split (reported once) hold disjoint
// held-out synsets: test ones have a test entry, valid ones only valid entries; train synsets are
// in neither. Valid retrieval candidates are the valid entries.
TEST(Benchmarks, ValidAndTestSetsAreDisjoint) {
  if (!std::filesystem::exists(wordnet_dir() + "/data.noun"))
    GTEST_SKIP() << "no WordNet in " << wordnet_dir();
  auto wn = load_wordnet();
  Dictionary d(wn);
  int64_t n[3] = {0, 0, 0};
  for (size_t s = 0; s < wn->synsets().size(); ++s) {
    const auto si = static_cast<int32_t>(s);
    bool has_train = false, has_test = false;
    for (auto i : d.synset_entries(si)) {
      has_train = has_train || d.entries()[i].split == Split::train;
      has_test = has_test || d.entries()[i].split == Split::test;
    }
    const Split want = !d.heldout_synset(si) ? Split::train : has_test ? Split::test : Split::valid;
    ASSERT_EQ(eval_split_of(d, si), want) << s;
    EXPECT_TRUE(want == Split::train || !has_train) << s;
    ++n[static_cast<int>(want)];
  }
  EXPECT_GT(n[static_cast<int>(Split::valid)], 100);
  EXPECT_GT(n[static_cast<int>(Split::test)], 100);
  auto rv = reverse_dictionary_set(d, 200, Split::valid);
  for (const auto& w : rv.candidates) EXPECT_EQ(d.entries()[d.find(w)].split, Split::valid) << w;
  WuPalmer wp(*wn);
  EXPECT_EQ(similarity_set(d, wp, 100, Split::valid).wup.size(), 100u);
  EXPECT_THROW(reverse_dictionary_set(d, 10, Split::train), Error);
}
