// The sampler (src/seqlab/infer/sampler.h) against a plain reference: a full sort by
// (probability, id), the cut, the cumulative walk. Plus what each rule promises on its own: greedy
// is argmax, top-k and top-p stay inside their sets, frequencies follow softmax(logits / T), and
// the draw depends on (seed, position) only.
#include "seqlab/core/error.h"
#include "seqlab/infer/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

using seqlab::infer::Sampler;
using seqlab::infer::SamplerConfig;

namespace {

std::vector<float> random_logits(int64_t V, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, scale);
  std::vector<float> l(V);
  for (auto& x : l) x = n(rng);
  return l;
}

SamplerConfig make_cfg(double t, int64_t k, double p, uint64_t seed = 1) {
  SamplerConfig c;
  c.temperature = t;
  c.top_k = k;
  c.top_p = p;
  c.seed = seed;
  return c;
}

// Unnormalised probabilities exactly as the sampler computes them.
std::vector<float> probs(const std::vector<float>& l, double t) {
  const float m = *std::max_element(l.begin(), l.end());
  const float inv_t = static_cast<float>(1.0 / t);
  std::vector<float> p(l.size());
  for (size_t i = 0; i < l.size(); ++i) p[i] = std::exp((l[i] - m) * inv_t);
  return p;
}

// Ids ordered most probable first, ties to the smaller id.
std::vector<int32_t> ranked(const std::vector<float>& p) {
  std::vector<int32_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(),
            [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  return idx;
}

// The kept set of top-k then top-p, in rank order (the whole ranking when neither applies).
std::vector<int32_t> kept_set(const std::vector<float>& p, int64_t k, double top_p) {
  auto idx = ranked(p);
  if (k > 0 && k < static_cast<int64_t>(idx.size())) idx.resize(k);
  if (top_p < 1.0) {
    double total = 0;
    for (auto i : idx) total += p[i];
    double cum = 0;
    size_t j = 0;
    while (j < idx.size() && cum < top_p * total) cum += p[idx[j++]];
    idx.resize(j);
  }
  return idx;
}

// The reference draw: the same rule, written plainly.
int64_t reference_sample(const std::vector<float>& l, const SamplerConfig& c, int64_t pos) {
  if (c.temperature == 0 || c.top_k == 1) {
    return std::max_element(l.begin(), l.end()) - l.begin();  // first maximum
  }
  const auto p = probs(l, c.temperature);
  std::vector<int32_t> order;
  if (c.top_k == 0 && c.top_p >= 1) {
    order.resize(p.size());
    std::iota(order.begin(), order.end(), 0);  // id order, as the sampler walks it
  } else {
    order = kept_set(p, c.top_k, c.top_p);
  }
  double total = 0;
  for (auto i : order) total += p[i];
  const double target = Sampler::uniform(c.seed, pos) * total;
  double cum = 0;
  int64_t last = -1;
  for (auto i : order) {
    if (p[i] <= 0) continue;
    cum += p[i];
    last = i;
    if (target < cum) return i;
  }
  return last;
}

}  // namespace

TEST(Sampler, GreedyIsArgmaxWithTiesToTheSmallerId) {
  for (uint32_t s = 0; s < 20; ++s) {
    auto l = random_logits(300, s);
    const int64_t best = std::max_element(l.begin(), l.end()) - l.begin();
    Sampler greedy(make_cfg(0, 0, 1, s), 300), top1(make_cfg(1.5, 1, 0.5, s), 300);
    for (int64_t pos : {0, 1, 17, 1000}) {
      EXPECT_EQ(greedy.sample(l.data(), pos), best);
      EXPECT_EQ(top1.sample(l.data(), pos), best);
    }
  }
  std::vector<float> tie = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f};
  Sampler g(make_cfg(0, 0, 1), 5);
  EXPECT_EQ(g.sample(tie.data(), 3), 1);
  EXPECT_EQ(seqlab::infer::argmax(tie.data(), 5), 1);
}

TEST(Sampler, EqualsThePlainReferenceOnEveryRule) {
  // Top-p on a flat vocabulary of 2000 needs far more than the first 64 candidates, so the growing
  // prefix is exercised; top-k larger than V is no limit.
  const std::vector<SamplerConfig> cfgs = {
      make_cfg(1.0, 0, 1.0, 3),    make_cfg(0.7, 0, 1.0, 4),   make_cfg(1.0, 10, 1.0, 5),
      make_cfg(1.3, 0, 0.9, 6),    make_cfg(0.8, 40, 0.8, 7),  make_cfg(1.0, 0, 0.3, 8),
      make_cfg(2.0, 5000, 1.0, 9), make_cfg(1.0, 0, 0.999, 10)};
  for (const auto& c : cfgs)
    for (int64_t V : {2, 7, 257, 2000}) {
      auto l = random_logits(V, static_cast<uint32_t>(V * 31 + c.seed), V == 2000 ? 0.3f : 3.0f);
      Sampler s(c, V);
      int mismatches = 0;
      for (int64_t pos = 0; pos < 200; ++pos) {
        const auto got = s.sample(l.data(), pos), want = reference_sample(l, c, pos);
        if (got != want && ++mismatches <= 3)
          ADD_FAILURE() << "T=" << c.temperature << " k=" << c.top_k << " p=" << c.top_p
                        << " V=" << V << " pos=" << pos << ": sampler " << got << ", reference "
                        << want;
      }
    }
}

TEST(Sampler, TopKNeverLeavesTheKBest) {
  const int64_t V = 500, k = 7;
  auto l = random_logits(V, 11, 1.0f);  // flat enough that all k get drawn
  const auto best = ranked(probs(l, 1.0));
  const std::set<int64_t> allowed(best.begin(), best.begin() + k);
  Sampler s(make_cfg(1.0, k, 1.0, 2), V);
  std::set<int64_t> seen;
  for (int64_t pos = 0; pos < 3000; ++pos) {
    const auto id = s.sample(l.data(), pos);
    ASSERT_TRUE(allowed.count(id)) << "token " << id << " at position " << pos;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(k));
}

TEST(Sampler, TopPNeverLeavesTheNucleus) {
  for (double top_p : {0.1, 0.5, 0.9}) {
    const int64_t V = 3000;
    auto l = random_logits(V, 12, 0.5f);
    const auto nucleus = kept_set(probs(l, 0.9), 0, top_p);
    const std::set<int64_t> allowed(nucleus.begin(), nucleus.end());
    Sampler s(make_cfg(0.9, 0, top_p, 5), V);
    std::set<int64_t> seen;
    for (int64_t pos = 0; pos < 4000; ++pos) {
      const auto id = s.sample(l.data(), pos);
      ASSERT_TRUE(allowed.count(id)) << "p=" << top_p << ": token " << id << " is outside the "
                                     << allowed.size() << "-token nucleus";
      seen.insert(id);
    }
    EXPECT_GT(seen.size(), allowed.size() / 2) << "p=" << top_p;
  }
  // A peaked distribution: the top token alone holds more than p, so it is always drawn.
  std::vector<float> l = {10.0f, 0.0f, 0.0f, 1.0f};
  Sampler s(make_cfg(1.0, 0, 0.9), 4);
  for (int64_t pos = 0; pos < 500; ++pos) ASSERT_EQ(s.sample(l.data(), pos), 0);
}

TEST(Sampler, LowTemperatureApproachesGreedy) {
  auto l = random_logits(100, 13);
  const int64_t best = std::max_element(l.begin(), l.end()) - l.begin();
  auto agree = [&](double t) {
    Sampler s(make_cfg(t, 0, 1.0, 21), 100);
    int n = 0;
    for (int64_t pos = 0; pos < 2000; ++pos) n += s.sample(l.data(), pos) == best;
    return n;
  };
  const int hot = agree(1.0), warm = agree(0.3), cold = agree(1e-4);
  EXPECT_EQ(cold, 2000);
  EXPECT_LE(hot, warm);
  EXPECT_LT(hot, 2000);
}

TEST(Sampler, FrequenciesFollowSoftmaxOfLogitsOverT) {
  const std::vector<float> l = {1.0f, 0.0f, -0.5f, 2.0f, 0.3f, -3.0f, 1.2f, 0.7f};
  for (double t : {0.6, 1.0, 1.7}) {
    std::vector<double> p(l.size());
    double z = 0;
    for (size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp(l[i] / t);
    Sampler s(make_cfg(t, 0, 1.0, 77), static_cast<int64_t>(l.size()));
    const int64_t n = 200000;
    std::vector<int64_t> count(l.size());
    for (int64_t pos = 0; pos < n; ++pos) ++count[s.sample(l.data(), pos)];
    for (size_t i = 0; i < l.size(); ++i) {
      const double want = p[i] / z, got = static_cast<double>(count[i]) / n;
      const double sigma = std::sqrt(want * (1 - want) / n);
      EXPECT_NEAR(got, want, 5 * sigma + 1e-6) << "T=" << t << " token " << i;
    }
  }
}

TEST(Sampler, TheDrawDependsOnSeedAndPositionOnly) {
  auto l = random_logits(257, 14, 1.0f);
  Sampler a(make_cfg(1.0, 50, 0.95, 5), 257), b(make_cfg(1.0, 50, 0.95, 5), 257),
      c(make_cfg(1.0, 50, 0.95, 6), 257);
  std::vector<int64_t> fwd, other_seed;
  for (int64_t pos = 0; pos < 100; ++pos) {
    fwd.push_back(a.sample(l.data(), pos));
    other_seed.push_back(c.sample(l.data(), pos));
  }
  // The same positions in another order (a resumed generation) give the same tokens.
  for (int64_t pos = 99; pos >= 0; --pos) EXPECT_EQ(b.sample(l.data(), pos), fwd[pos]) << pos;
  EXPECT_NE(fwd, other_seed);
  EXPECT_EQ(Sampler::uniform(5, 17), Sampler::uniform(5, 17));
  EXPECT_NE(Sampler::uniform(5, 17), Sampler::uniform(5, 18));
  EXPECT_NE(Sampler::uniform(5, 17), Sampler::uniform(6, 17));
}

TEST(Sampler, MinusInfinityIsNeverDrawnAndNanIsAnError) {
  const float inf = INFINITY;
  std::vector<float> l = {-inf, 0.0f, -inf, 0.0f};
  Sampler s(make_cfg(1.0, 0, 1.0), 4), sk(make_cfg(1.0, 3, 0.99), 4);
  for (int64_t pos = 0; pos < 300; ++pos) {
    const auto a = s.sample(l.data(), pos), b = sk.sample(l.data(), pos);
    ASSERT_TRUE(a == 1 || a == 3) << a;
    ASSERT_TRUE(b == 1 || b == 3) << b;
  }
  std::vector<float> bad = {0.0f, NAN, 1.0f};
  Sampler s3(make_cfg(1.0, 0, 1.0), 3);
  EXPECT_THROW(s3.sample(bad.data(), 0), seqlab::Error);
  std::vector<float> all_inf = {-inf, -inf, -inf};
  EXPECT_THROW(s3.sample(all_inf.data(), 0), seqlab::Error);
}

TEST(Sampler, BadSettingsAreErrors) {
  EXPECT_THROW(make_cfg(-0.1, 0, 1.0).validate(), seqlab::Error);
  EXPECT_THROW(make_cfg(NAN, 0, 1.0).validate(), seqlab::Error);
  EXPECT_THROW(make_cfg(1.0, -1, 1.0).validate(), seqlab::Error);
  EXPECT_THROW(make_cfg(1.0, 0, 0.0).validate(), seqlab::Error);
  EXPECT_THROW(make_cfg(1.0, 0, 1.01).validate(), seqlab::Error);
  EXPECT_THROW(Sampler(make_cfg(1.0, 0, -2), 10), seqlab::Error);
  EXPECT_THROW(Sampler(make_cfg(1.0, 0, 1.0), 0), seqlab::Error);
  EXPECT_NO_THROW(make_cfg(0.0, 0, 1.0).validate());
  EXPECT_NO_THROW(make_cfg(1.0, 0, 1e-9).validate());
}
