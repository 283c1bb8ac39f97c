#include "seqlab/tasks/seq2seq.h"

#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::rows;

namespace {

// A toy transduction with output length 2n + 3 (so T = 3n + 4), symbols {0, 1, 2}, n >= 2, and
// output = input then three 7s; only the input copy is scored.
class ToyTask : public Seq2SeqTask {
 public:
  std::string name() const override { return "toy"; }
  int64_t n_classes() const override { return 8; }

 protected:
  int64_t n_symbols() const override { return 3; }
  int64_t output_length(int64_t n) const override { return 2 * n + 3; }
  int64_t min_input_length() const override { return 2; }
  Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const override {
    Seq2SeqExample e;
    for (int64_t j = 0; j < n; ++j) e.input.push_back(draw_below(rng, 3));
    e.output = e.input;
    e.output.resize(2 * n + 3, 7);
    e.n_scored = n;
    return e;
  }
};

}  // namespace

TEST(Seq2Seq, PackLaysOutInputSepBlanksPads) {
  // n_symbols 2: SEP = 2, BLANK = 3, PAD = 4.
  std::vector<Seq2SeqExample> ex(2);
  ex[0].input = {1, 0, 1};
  ex[0].output = {1, 0, 1};
  ex[1].input = {0};
  ex[1].output = {1, 1};
  ex[1].n_scored = 1;
  auto b = pack_seq2seq(ex, 9, 2);
  EXPECT_EQ(rows(b.input)[0], (std::vector<int64_t>{1, 0, 1, 2, 3, 3, 3, 4, 4}));
  EXPECT_EQ(rows(b.target)[0], (std::vector<int64_t>{0, 0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(rows(b.mask)[0], (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(rows(b.input)[1], (std::vector<int64_t>{0, 2, 3, 3, 4, 4, 4, 4, 4}));
  EXPECT_EQ(rows(b.target)[1], (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(rows(b.mask)[1], (std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(Seq2Seq, PackRejectsWhatDoesNotFit) {
  std::vector<Seq2SeqExample> ex(1);
  ex[0].input = {1, 0, 1};
  ex[0].output = {1, 0, 1};
  EXPECT_NO_THROW(pack_seq2seq(ex, 7, 2));
  EXPECT_THROW(pack_seq2seq(ex, 6, 2), Error);
  ex[0].input = {1, 2};  // 2 is SEP, not an input symbol
  EXPECT_THROW(pack_seq2seq(ex, 7, 2), Error);
}

TEST(Seq2Seq, InputLengthIsTheLargestThatFits) {
  ToyTask t;
  EXPECT_EQ(t.min_length(), 10);
  for (int64_t T = 10; T < 200; ++T) {
    const int64_t n = t.input_length(T);
    EXPECT_LE(3 * n + 4, T) << "T " << T;
    EXPECT_GT(3 * (n + 1) + 4, T) << "T " << T;
  }
  EXPECT_THROW(t.input_length(9), Error);
}

TEST(Seq2Seq, SampleFollowsTheLayout) {
  ToyTask t;
  for (int64_t T : {10, 11, 12, 13, 40}) {
    auto b = t.sample(5, T, T);
    const int64_t n = (T - 4) / 3;
    for (int64_t i = 0; i < 5; ++i) {
      auto r = seqlab::testing::parse_seq2seq_row(b, i, 3);
      ASSERT_EQ(static_cast<int64_t>(r.x.size()), n);
      ASSERT_EQ(static_cast<int64_t>(r.y.size()), 2 * n + 3);
      EXPECT_EQ(r.n_pad, T - (3 * n + 4));
      for (int64_t j = 0; j < 2 * n + 3; ++j) {
        EXPECT_EQ(r.y[j], j < n ? r.x[j] : 7);
        EXPECT_EQ(r.scored[j], j < n);
      }
    }
  }
  seqlab::testing::check_task_contract(t, 25);
}

TEST(Seq2Seq, DrawsAreInRangeAndUniform) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> count(3, 0);
  for (int i = 0; i < 30000; ++i) {
    const int64_t v = draw_below(rng, 3);
    ASSERT_TRUE(v >= 0 && v < 3);
    ++count[v];
    const double u = draw_unit(rng);
    ASSERT_TRUE(u >= 0 && u < 1);
  }
  for (auto c : count) EXPECT_NEAR(c / 30000.0, 1.0 / 3, 0.02);
}

TEST(Seq2Seq, RowsToTensorChecksItsSize) {
  EXPECT_THROW(rows_to_tensor({1, 2, 3}, 2, 2), Error);
  auto t = rows_to_tensor({1, 2, 3, 4}, 2, 2);
  EXPECT_EQ(t[1][0].item<int64_t>(), 3);
}
