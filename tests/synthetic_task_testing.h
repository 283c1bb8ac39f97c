// Shared checks for synthetic task generators.
//
// Each task test recomputes its labels by brute force from the input tokens; these helpers do the
// parts every task shares: reading a sequence-to-sequence row back (input, SEP, BLANKs, PADs; see
// src/seqlab/tasks/seq2seq.h) while checking its layout, and the seed/shape/length contract.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/tasks/task.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace seqlab::testing {

// Row-major copy of a [B,T] tensor.
inline std::vector<std::vector<int64_t>> rows(const torch::Tensor& t) {
  auto c = t.to(torch::kLong).contiguous();
  std::vector<std::vector<int64_t>> out(c.size(0));
  for (int64_t b = 0; b < c.size(0); ++b) {
    const int64_t* p = c.data_ptr<int64_t>() + b * c.size(1);
    out[b].assign(p, p + c.size(1));
  }
  return out;
}

// One sequence-to-sequence row read back: x, then SEP, then BLANKs (targets y, scored flags),
// then PADs.
struct Seq2SeqRow {
  std::vector<int64_t> x, y;
  std::vector<bool> scored;
  int64_t n_pad = 0;
};

// Reads row b, with ADD_FAILURE on any layout violation: symbols outside [0, n_symbols) before
// SEP, anything but BLANK then PAD after it, a mask outside the BLANKs.
inline Seq2SeqRow parse_seq2seq_row(const Batch& batch, int64_t b, int64_t n_symbols) {
  const int64_t sep = n_symbols, blank = n_symbols + 1, pad = n_symbols + 2;
  const auto in = rows(batch.input)[b], tg = rows(batch.target)[b], mk = rows(batch.mask)[b];
  const int64_t T = static_cast<int64_t>(in.size());
  Seq2SeqRow r;
  int64_t t = 0;
  for (; t < T && in[t] != sep; ++t) {
    if (in[t] < 0 || in[t] >= n_symbols)
      ADD_FAILURE() << "row " << b << " t " << t << ": " << in[t];
    if (mk[t]) ADD_FAILURE() << "row " << b << ": input position " << t << " is scored";
    r.x.push_back(in[t]);
  }
  if (t == T) ADD_FAILURE() << "row " << b << ": no SEP";
  if (t < T && mk[t]) ADD_FAILURE() << "row " << b << ": SEP is scored";
  for (++t; t < T && in[t] == blank; ++t) {
    r.y.push_back(tg[t]);
    r.scored.push_back(mk[t] != 0);
  }
  for (; t < T; ++t, ++r.n_pad) {
    if (in[t] != pad) ADD_FAILURE() << "row " << b << " t " << t << ": " << in[t] << " not PAD";
    if (mk[t]) ADD_FAILURE() << "row " << b << ": PAD position " << t << " is scored";
  }
  return r;
}

// The contract of every task: shapes and dtypes, determinism per seed, different seeds differ,
// min_length() works and anything shorter throws seqlab::Error.
inline void check_task_contract(const Task& task, int64_t length) {
  SCOPED_TRACE(task.name());
  const int64_t B = 8;
  auto a = task.sample(B, length, 11);
  ASSERT_EQ(a.input.sizes(), (std::vector<int64_t>{B, length}));
  EXPECT_EQ(a.input.scalar_type(), torch::kLong);
  EXPECT_EQ(a.mask.scalar_type(), torch::kBool);
  ASSERT_EQ(a.mask.sizes(), a.input.sizes());
  if (task.head() == "classify") {
    EXPECT_EQ(a.target.sizes(), (std::vector<int64_t>{B}));
  } else {
    EXPECT_EQ(a.target.sizes(), a.input.sizes());
    EXPECT_TRUE(a.mask.any().item<bool>()) << "nothing is scored";
  }
  EXPECT_GE(a.input.min().item<int64_t>(), 0);
  EXPECT_LT(a.input.max().item<int64_t>(), task.vocab_size());
  const int64_t classes = task.head() == "lm" ? task.vocab_size() : task.n_classes();
  EXPECT_GE(a.target.min().item<int64_t>(), 0);
  EXPECT_LT(a.target.max().item<int64_t>(), classes);
  auto again = task.sample(B, length, 11);
  EXPECT_TRUE(a.input.equal(again.input) && a.target.equal(again.target) &&
              a.mask.equal(again.mask));
  EXPECT_FALSE(a.input.equal(task.sample(B, length, 12).input));
  EXPECT_NO_THROW(task.sample(2, task.min_length(), 1));
  EXPECT_THROW(task.sample(2, task.min_length() - 1, 1), Error);
}

}  // namespace seqlab::testing
