#include "seqlab/tasks/anbn.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

// Logits that put (almost) all mass on the true next symbol at every position.
torch::Tensor oracle_logits(const Batch& b, int64_t vocab) {
  return torch::one_hot(b.target, vocab).to(torch::kFloat) * 20.0f;  // [B,T,V]
}

}  // namespace

TEST(Anbn, LayoutRecomputedIndependently) {
  for (int64_t letters : {2, 3}) {
    AnbnTask t{TaskConfig(), letters};
    const int64_t bos = letters, eos = letters + 1, pad = letters + 2;
    for (int64_t T = t.min_length(); T <= 20; ++T) {
      auto b = t.sample(3, T, 5);
      ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{3, T}));
      const int64_t n = (T - 2) / letters;
      ASSERT_EQ(t.n_of(T), n);
      // The one string: BOS, n of each letter in order, EOS, then padding.
      std::vector<int64_t> want = {bos};
      for (int64_t l = 0; l < letters; ++l)
        for (int64_t j = 0; j < n; ++j) want.push_back(l);
      want.push_back(eos);
      while (static_cast<int64_t>(want.size()) < T) want.push_back(pad);
      auto in = b.input.accessor<int64_t, 2>();
      auto tg = b.target.accessor<int64_t, 2>();
      auto mk = b.mask.accessor<bool, 2>();
      auto det = t.determined(b);
      auto dt = det.accessor<bool, 2>();
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < T; ++j) {
          ASSERT_EQ(in[i][j], want[j]) << "letters " << letters << " T " << T << " pos " << j;
          if (j + 1 < T) {
            ASSERT_EQ(tg[i][j], want[j + 1]);
          }
          const bool real = want[j] != eos && want[j] != pad;
          ASSERT_EQ(mk[i][j], real) << "trained on every real position";
          // Determined: after the first b, i.e. reading a b or a c.
          ASSERT_EQ(dt[i][j], real && want[j] >= 1 && want[j] < letters) << "pos " << j;
        }
    }
  }
}

TEST(Anbn, OneStringPerLength) {
  AnbnTask t{TaskConfig()};
  // The language has one member per n, so the seed cannot matter.
  EXPECT_TRUE(t.sample(4, 12, 1).input.equal(t.sample(4, 12, 2).input));
  EXPECT_FALSE(t.sample(4, 12, 1).input.equal(t.sample(4, 12, 1).input.roll(1, 1)));
}

TEST(Anbn, AcceptanceNeedsEveryDeterminedSymbol) {
  TaskConfig c;
  c.threshold = 0.5;
  AnbncnTask t{c};
  EXPECT_EQ(t.name(), "anbncn");
  const int64_t V = t.vocab_size(), T = 3 * 4 + 2 + 1;  // n = 4 and one PAD
  auto b = t.sample(2, T, 0);
  auto logits = oracle_logits(b, V);
  auto s = t.score(logits, b);
  EXPECT_DOUBLE_EQ(s.extra["accepted"], 1.0);
  EXPECT_DOUBLE_EQ(s.extra["string_n"], 4.0);
  EXPECT_EQ(s.n, 2 * (4 + 4));  // the b's and c's of both strings
  EXPECT_DOUBLE_EQ(s.accuracy, 1.0);

  // Undetermined positions (the a's) may be predicted wrongly without rejecting the string.
  auto wrong_a = logits.clone();
  wrong_a.select(1, 2).zero_();
  wrong_a.select(1, 2).select(1, 2) = 20.0f;  // reading an a, predicts c
  EXPECT_DOUBLE_EQ(t.score(wrong_a, b).extra["accepted"], 1.0);

  // A flat distribution at one determined position of string 0 (p = 1/V < 0.5) rejects it.
  auto flat = logits.clone();
  flat[0][7].zero_();  // position 7 reads a b
  auto r = t.score(flat, b);
  EXPECT_DOUBLE_EQ(r.extra["accepted"], 0.5);
  // With a threshold below 1/V the same string is accepted again.
  c.threshold = 0.5 / V;
  EXPECT_DOUBLE_EQ(AnbncnTask{c}.score(flat, b).extra["accepted"], 1.0);
}

TEST(Anbn, ImpossibleOptionsThrow) {
  TaskConfig c;
  c.threshold = 0;
  EXPECT_THROW(AnbnTask{c}, Error);
  c.threshold = 1;
  EXPECT_THROW(AnbncnTask{c}, Error);
  AnbnTask t{TaskConfig()};
  EXPECT_EQ(t.min_length(), 4);
  EXPECT_EQ(AnbncnTask{TaskConfig()}.min_length(), 5);
  EXPECT_THROW(t.sample(2, 3, 0), Error);
  EXPECT_THROW(AnbncnTask{TaskConfig()}.sample(2, 4, 0), Error);
}
