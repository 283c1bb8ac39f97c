#include "seqlab/tasks/dyck_bounded.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

struct Check {
  bool member;
  bool counts_agree;  // as many opens as closes
  bool matched;       // in Dyck-k, depth ignored
  int64_t max_depth;
};

// Brute force with a stack: opens are ids < k, close_j = k + j.
Check check(const std::vector<int64_t>& s, int64_t k, int64_t m) {
  std::vector<int64_t> stack;
  int64_t opens = 0, depth = 0;
  bool matched = true;
  for (int64_t x : s) {
    if (x < k) {
      stack.push_back(x);
      ++opens;
      depth = std::max<int64_t>(depth, static_cast<int64_t>(stack.size()));
    } else if (stack.empty() || stack.back() != x - k) {
      matched = false;
      if (!stack.empty()) stack.pop_back();
    } else {
      stack.pop_back();
    }
  }
  matched = matched && stack.empty();
  const bool counts = 2 * opens == static_cast<int64_t>(s.size());
  return {matched && depth <= m, counts, matched, depth};
}

// Is s one substitution or one adjacent transposition away from a member?
bool one_edit_from_member(std::vector<int64_t> s, int64_t k, int64_t m) {
  for (size_t p = 0; p < s.size(); ++p) {
    const int64_t keep = s[p];
    for (int64_t x = 0; x < 2 * k; ++x) {
      s[p] = x;
      if (x != keep && check(s, k, m).member) return true;
    }
    s[p] = keep;
    if (p + 1 < s.size() && s[p] != s[p + 1]) {
      std::swap(s[p], s[p + 1]);
      const bool ok = check(s, k, m).member;
      std::swap(s[p], s[p + 1]);
      if (ok) return true;
    }
  }
  return false;
}

struct Stats {
  int64_t pos = 0, neg = 0, neg_counts_agree = 0, neg_depth_only = 0, neg_one_edit = 0;
};

Stats verify(const DyckBoundedTask& t, int64_t k, int64_t m, int64_t B, int64_t T, uint64_t seed) {
  auto b = t.sample(B, T, seed);
  EXPECT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
  EXPECT_EQ(b.target.sizes(), (std::vector<int64_t>{B}));
  auto in = b.input.accessor<int64_t, 2>();
  auto tg = b.target.accessor<int64_t, 1>();
  Stats st;
  const int64_t lead = T % 2;
  for (int64_t i = 0; i < B; ++i) {
    if (lead) {
      EXPECT_EQ(in[i][0], 2 * k) << "odd T starts with PAD";
    }
    std::vector<int64_t> s;
    for (int64_t j = lead; j < T; ++j) {
      EXPECT_TRUE(in[i][j] >= 0 && in[i][j] < 2 * k);
      s.push_back(in[i][j]);
    }
    const auto c = check(s, k, m);
    EXPECT_EQ(tg[i], c.member ? 1 : 0) << "T=" << T << " sequence " << i;
    if (c.member) {
      ++st.pos;
    } else {
      ++st.neg;
      st.neg_counts_agree += c.counts_agree;
      st.neg_depth_only += c.matched && c.max_depth > m;
      st.neg_one_edit += one_edit_from_member(s, k, m);
    }
  }
  return st;
}

}  // namespace

TEST(DyckBounded, LabelsBalancedAndRecomputedWithAStack) {
  for (auto [k, m] : {std::pair<int64_t, int64_t>{2, 2}, {1, 3}, {3, 1}}) {
    TaskConfig c;
    c.n_types = k;
    c.depth = m;
    DyckBoundedTask t{c};
    EXPECT_EQ(t.vocab_size(), 2 * k + 1);
    for (int64_t T : {2, 3, 8, 21, 40}) {
      auto st = verify(t, k, m, 100, T, 17);
      EXPECT_EQ(st.pos, 50) << "k=" << k << " m=" << m << " T=" << T;
    }
  }
}

TEST(DyckBounded, NegativesAreOneEditAwayAndHard) {
  TaskConfig c;  // k = 2, m = 2
  DyckBoundedTask t{c};
  auto st = verify(t, 2, 2, 400, 24, 3);
  ASSERT_EQ(st.neg, 200);
  EXPECT_EQ(st.neg_one_edit, st.neg) << "every negative is one edit from a member";
  // Counting opens against closes must not suffice, and some negatives break only the depth bound.
  EXPECT_GE(st.neg_counts_agree, st.neg * 7 / 10);
  EXPECT_GE(st.neg_depth_only, st.neg / 8);
}

// Logits [B,2] that pick class 1 where call[i] is true.
torch::Tensor logits_for(const std::vector<bool>& call) {
  auto l = torch::zeros({static_cast<int64_t>(call.size()), 2});
  for (size_t i = 0; i < call.size(); ++i) l[static_cast<int64_t>(i)][call[i] ? 1 : 0] = 5.0;
  return l;
}

TEST(DyckBounded, ScoreSplitsNegativesByTheirFault) {
  TaskConfig c;  // k = 2, m = 2
  DyckBoundedTask t{c};
  const int64_t B = 300, T = 21;
  auto b = t.sample(B, T, 11);
  auto in = b.input.accessor<int64_t, 2>();
  // Recount with the brute-force checker (types erased: k = 1 on the skeleton), and build four
  // models' calls: the truth, "always member", a depth-blind one that accepts every matched
  // string, and a type-blind one that accepts every string whose skeleton is in Dyck-(1, 2).
  double pos = 0, deep = 0, type = 0, shape = 0;
  std::vector<bool> truth, always(B, true), depth_blind, type_blind;
  for (int64_t i = 0; i < B; ++i) {
    std::vector<int64_t> s, skeleton;
    for (int64_t j = 1; j < T; ++j) {  // odd T: one leading PAD
      s.push_back(in[i][j]);
      skeleton.push_back(in[i][j] < 2 ? 0 : 1);
    }
    const auto ck = check(s, 2, 2);
    const bool shape_ok = check(skeleton, 1, 2).member;
    pos += ck.member;
    deep += !ck.member && ck.matched;
    type += !ck.member && !ck.matched && shape_ok;
    shape += !ck.member && !ck.matched && !shape_ok;
    truth.push_back(ck.member);
    depth_blind.push_back(ck.matched);
    type_blind.push_back(shape_ok);
  }
  ASSERT_GT(deep, 0);
  ASSERT_GT(type, 0);
  ASSERT_GT(shape, 0);
  auto st = t.score(logits_for(truth), b);
  EXPECT_DOUBLE_EQ(st.accuracy, 1.0);
  EXPECT_DOUBLE_EQ(st.extra.at("pos_share"), pos / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_depth_share"), deep / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_type_share"), type / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_shape_share"), shape / B);
  for (auto k : {"pos", "neg_depth", "neg_type", "neg_shape"})
    EXPECT_DOUBLE_EQ(st.extra.at(std::string(k) + "_right"),
                     st.extra.at(std::string(k) + "_share"));

  st = t.score(logits_for(always), b);
  EXPECT_DOUBLE_EQ(st.extra.at("pos_right"), pos / B);
  for (auto k : {"neg_depth", "neg_type", "neg_shape"})
    EXPECT_DOUBLE_EQ(st.extra.at(std::string(k) + "_right"), 0.0);

  st = t.score(logits_for(depth_blind), b);
  EXPECT_DOUBLE_EQ(st.extra.at("pos_right"), pos / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_depth_right"), 0.0);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_type_right"), type / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_shape_right"), shape / B);
  EXPECT_NEAR(st.accuracy, (pos + type + shape) / B, 1e-12);

  st = t.score(logits_for(type_blind), b);
  EXPECT_DOUBLE_EQ(st.extra.at("pos_right"), pos / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_type_right"), 0.0);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_depth_right"), deep / B);
  EXPECT_DOUBLE_EQ(st.extra.at("neg_shape_right"), shape / B);
}

TEST(DyckBounded, DeterministicPerSeed) {
  DyckBoundedTask t{TaskConfig()};
  auto a = t.sample(8, 16, 3), b = t.sample(8, 16, 3), d = t.sample(8, 16, 4);
  EXPECT_TRUE(a.input.equal(b.input));
  EXPECT_TRUE(a.target.equal(b.target));
  EXPECT_FALSE(a.input.equal(d.input));
}

TEST(DyckBounded, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.n_types = 0;
  EXPECT_THROW(DyckBoundedTask{c}, Error);
  c.n_types = 2;
  c.depth = 0;
  EXPECT_THROW(DyckBoundedTask{c}, Error);
  DyckBoundedTask t{TaskConfig()};
  EXPECT_THROW(t.sample(4, 1, 0), Error);
}
