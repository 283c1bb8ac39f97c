// pointer_chase: every label is recomputed from the tokens alone by following the pointers, the
// hop counts are balanced and are the difficulty, and bad lengths and depths are refused.
#include "seqlab/tasks/pointer_chase.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>

using namespace seqlab;
using seqlab::testing::rows;

namespace {

TaskConfig config(int64_t max_len, int64_t depth = 2) {
  TaskConfig c;
  c.task = "pointer_chase";
  c.max_len = max_len;
  c.depth = depth;
  return c;
}

}  // namespace

TEST(PointerChase, Contract) {
  PointerChaseTask t(config(17));
  seqlab::testing::check_task_contract(t, 17);
  EXPECT_EQ(t.n_classes(), 16);
  EXPECT_EQ(t.vocab_size(), 16 * 3);
  EXPECT_EQ(t.min_length(), 17);
  auto made = make_task(config(9, 3));  // --min-len 0 resolves to the one length
  EXPECT_EQ(made->name(), "pointer_chase");
  EXPECT_EQ(made->vocab_size(), 8 * 4);
}

TEST(PointerChase, LabelsFollowThePointers) {
  for (const int64_t depth : {1, 2, 4}) {
    SCOPED_TRACE(depth);
    const int64_t T = 11, N = T - 1, B = 60;
    PointerChaseTask t(config(T, depth));
    const auto b = t.sample(B, T, 5);
    const auto in = rows(b.input);
    std::vector<int64_t> per_hop(depth + 1);
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t j = 0; j < N; ++j) ASSERT_TRUE(in[i][j] >= 0 && in[i][j] < N) << in[i][j];
      const int64_t q = in[i][N] - N;  // (k - 1) N + p
      ASSERT_TRUE(q >= 0 && q < depth * N) << in[i][N];
      const int64_t k = 1 + q / N, p = q % N;
      int64_t at = p;
      for (int64_t h = 0; h < k; ++h) at = in[i][at];
      EXPECT_EQ(b.target[i].item<int64_t>(), at) << "row " << i;
      EXPECT_EQ(b.difficulty[i].item<float>(), static_cast<float>(k - 1));
      ++per_hop[k];
    }
    for (int64_t k = 1; k <= depth; ++k) EXPECT_EQ(per_hop[k], B / depth) << "k " << k;
    EXPECT_TRUE(b.valid.all().item<bool>());
  }
}

// B not a multiple of K: each count gets floor(B/K) or one more, and over seeds every hop count
// is drawn even in a batch of 1.
TEST(PointerChase, RemainderGoesToRandomHopCounts) {
  const int64_t T = 9, N = T - 1, K = 3;
  PointerChaseTask t(config(T, K));
  const auto b = t.sample(61, T, 3);
  std::vector<int64_t> per_hop(K + 1);
  for (int64_t i = 0; i < 61; ++i) ++per_hop[1 + (rows(b.input)[i][N] - N) / N];
  for (int64_t k = 1; k <= K; ++k) EXPECT_TRUE(per_hop[k] == 20 || per_hop[k] == 21) << k;
  std::vector<int64_t> single(K + 1);
  for (uint64_t seed = 0; seed < 60; ++seed)
    ++single[1 + static_cast<int64_t>(t.sample(1, T, seed).difficulty[0].item<float>())];
  for (int64_t k = 1; k <= K; ++k) EXPECT_GT(single[k], 5) << "hop count " << k;
}

TEST(PointerChase, BadInputIsRefused) {
  EXPECT_THROW(PointerChaseTask(config(2)), Error);
  EXPECT_THROW(PointerChaseTask(config(9, 0)), Error);
  EXPECT_THROW(PointerChaseTask(config(9, 5)), Error);
  PointerChaseTask t(config(9));
  EXPECT_THROW(t.sample(4, 10, 1), Error);  // another length: other classes
  EXPECT_THROW(t.sample(0, 9, 1), Error);
  EXPECT_NO_THROW(t.sample(4, 9, 1));
}
