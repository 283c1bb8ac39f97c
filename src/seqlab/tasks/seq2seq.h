// Sequence-to-sequence tasks in one causal stream, and the sampling helpers the synthetic tasks
// share.
//
// Deletang et al. (ICLR 2023, "Neural Networks and the Chomsky Hierarchy") pose every task as a
// transduction: read an input string x of length n, then emit an output y whose length depends
// only on n. Their recurrent models read x and then |y| empty tokens, emitting y at those steps,
// with no teacher forcing. seqlab's models are causal single-stream taggers, so one example is laid
// out as
//
//   x_1 .. x_n  SEP  BLANK .. BLANK  PAD .. PAD
//                    '- |y| slots -' '- fill -'
//
// with y_j the target at the j-th BLANK and the mask true only on (a prefix of) the BLANKs. The
// stream length T is what the trainer and `seqlab eval --lengths` pass; the natural input length n
// is derived from it as the largest admissible n with n + 1 + |y(n)| <= T. Positions left over
// (when T does not fit exactly) are trailing PADs, which a causal model never sees before it
// answers, so they change nothing but the stream length.
//
// Token ids: the task's input symbols are 0..n_symbols-1, then SEP, BLANK and PAD.
#pragma once

#include "seqlab/tasks/task.h"

#include <random>
#include <vector>

namespace seqlab {

// One example before packing. The first n_scored output slots are scored (-1: all of them).
struct Seq2SeqExample {
  std::vector<int64_t> input;   // x, ids in [0, n_symbols)
  std::vector<int64_t> output;  // y, ids in [0, n_classes)
  int64_t n_scored = -1;
};

// Lays examples out in a [B,T] stream as described above. Every example must fit in T.
Batch pack_seq2seq(const std::vector<Seq2SeqExample>& examples, int64_t length, int64_t n_symbols);

// The base of the Deletang tasks: a tag head over the output classes, the layout above, and the
// mapping from T to n. A subclass says what its alphabet is, how long the output is and how to
// draw one example of input length n.
class Seq2SeqTask : public Task {
 public:
  std::string head() const override { return "tag"; }
  int64_t vocab_size() const override { return n_symbols() + 3; }
  int64_t min_length() const override { return stream_length(min_input_length()); }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;

  int64_t sep() const { return n_symbols(); }
  int64_t blank() const { return n_symbols() + 1; }
  int64_t pad() const { return n_symbols() + 2; }
  // T for input length n: n + SEP + |y(n)|.
  int64_t stream_length(int64_t n) const { return n + 1 + output_length(n); }
  // The input length n used for stream length T (largest admissible n that fits).
  virtual int64_t input_length(int64_t length) const;

 protected:
  virtual int64_t n_symbols() const = 0;
  virtual int64_t output_length(int64_t n) const = 0;  // non-decreasing in n
  virtual int64_t min_input_length() const { return 1; }
  virtual Seq2SeqExample draw(std::mt19937_64& rng, int64_t n) const = 0;
};

// Portable draws (the same numbers with every standard library, unlike std::*_distribution).
// Uniform in [0, k), k >= 1; the modulo bias is below k / 2^64.
inline int64_t draw_below(std::mt19937_64& rng, int64_t k) {
  return static_cast<int64_t>(rng() % static_cast<uint64_t>(k));
}
// Uniform in [0, 1) with 53 random bits.
inline double draw_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1p-53;
}

// A [B,T] int64 tensor from row-major values.
torch::Tensor rows_to_tensor(const std::vector<int64_t>& values, int64_t batch, int64_t length);

}  // namespace seqlab
