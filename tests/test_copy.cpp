#include "seqlab/tasks/copy.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::rows;

namespace {
std::unique_ptr<Task> copy_task(int64_t vocab) {
  TaskConfig c;
  c.task = "copy";
  c.min_len = 10;  // make_task checks the training lengths against min_length()
  c.vocab = vocab;
  return make_task(c);
}
}  // namespace

TEST(Copy, TeacherForcedCopyIsScored) {
  for (int64_t vocab : {0, 2, 7}) {
    auto t = copy_task(vocab);
    const int64_t k = vocab == 0 ? 26 : vocab, sep = k, pad = k + 1;
    EXPECT_EQ(t->vocab_size(), k + 2);
    for (int64_t T : {2, 3, 10, 41}) {
      auto b = t->sample(16, T, T + vocab);
      const auto in = rows(b.input), tg = rows(b.target), mk = rows(b.mask);
      const int64_t n = T / 2;
      for (int64_t i = 0; i < 16; ++i) {
        const std::vector<int64_t> x(in[i].begin(), in[i].begin() + n);
        for (auto v : x) EXPECT_TRUE(v >= 0 && v < k);
        EXPECT_EQ(in[i][n], sep);
        for (int64_t t2 = 0; t2 < T; ++t2) {
          const bool copy = t2 >= n && t2 < 2 * n;
          EXPECT_EQ(mk[i][t2] != 0, copy) << "T " << T << " t " << t2;
          if (copy) {
            EXPECT_EQ(tg[i][t2], x[t2 - n]) << "T " << T << " row " << i << " t " << t2;
          }
          if (t2 > n && t2 < 2 * n) {
            EXPECT_EQ(in[i][t2], x[t2 - n - 1]) << "teacher forcing";
          }
          if (t2 + 1 < 2 * n) {
            EXPECT_EQ(tg[i][t2], in[i][t2 + 1]) << "lm targets";
          }
          if (t2 >= 2 * n) {
            EXPECT_EQ(in[i][t2], pad);
          }
        }
      }
    }
  }
}

TEST(Copy, ImpossibleVocabThrows) {
  EXPECT_THROW(copy_task(1), Error);
  EXPECT_THROW(copy_task(-1), Error);
}

TEST(Copy, Contract) {
  auto t = copy_task(0);
  EXPECT_EQ(t->head(), "lm");
  EXPECT_EQ(t->min_length(), 2);
  seqlab::testing::check_task_contract(*t, 33);
}
