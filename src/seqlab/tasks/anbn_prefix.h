// anbn_prefix: the language a^n b^n Sigma* over {a, b}, tagged at every prefix.
//
// Merrill et al. (ACL 2020, "A Formal Hierarchy of RNN Architectures") use a^n b^n Sigma* to
// separate counter machines (saturated LSTM) from architectures without an unbounded counter
// (saturated GRU, QRNN): deciding it means counting the leading a's and checking them off against
// the b's that follow, after which the answer never changes.
//
// Symbols a = 0, b = 1. Position t is tagged 1 iff some prefix x_0..x_j with j <= t equals
// a^n b^n for an n >= 1; every position is scored. Such a prefix is unique when it exists: n must
// be the length of the leading run of a's. The strings are:
//   2/3  positives: a^n b^n then uniform junk, n uniform in [1, T/2];
//   1/4  near misses: a^k b^m with k uniform in [2, (T+1)/2] and 1 <= m < k, then an 'a' and
//        junk (or the end of the string); half stop exactly one b short. They look like
//        positives until the b-run ends;
//   rest uniform random strings (almost all negative).
// About a third of all tags are 1. min_length is 2 (a b).
#pragma once

#include "seqlab/tasks/task.h"

namespace seqlab {

class AnbnPrefixTask : public Task {
 public:
  explicit AnbnPrefixTask(const TaskConfig&) {}
  std::string name() const override { return "anbn_prefix"; }
  int64_t vocab_size() const override { return 2; }
  std::string head() const override { return "tag"; }
  int64_t n_classes() const override { return 2; }
  int64_t min_length() const override { return 2; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
};

}  // namespace seqlab
