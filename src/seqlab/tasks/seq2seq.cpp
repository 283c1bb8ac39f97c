#include "seqlab/tasks/seq2seq.h"

#include "seqlab/core/error.h"

namespace seqlab {

torch::Tensor rows_to_tensor(const std::vector<int64_t>& values, int64_t batch, int64_t length) {
  SEQLAB_CHECK(static_cast<int64_t>(values.size()) == batch * length,
               "rows_to_tensor: {} values for a [{},{}] tensor", values.size(), batch, length);
  auto* data = const_cast<int64_t*>(values.data());
  return torch::from_blob(data, {batch, length}, torch::kLong).clone();  // [B,T]
}

Batch pack_seq2seq(const std::vector<Seq2SeqExample>& examples, int64_t length, int64_t n_symbols) {
  const int64_t B = static_cast<int64_t>(examples.size());
  const int64_t sep = n_symbols, blank = n_symbols + 1, pad = n_symbols + 2;
  std::vector<int64_t> input(B * length, pad), target(B * length, 0), mask(B * length, 0);
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = examples[b];
    const int64_t n = static_cast<int64_t>(e.input.size());
    const int64_t m = static_cast<int64_t>(e.output.size());
    SEQLAB_CHECK(n + 1 + m <= length, "seq2seq: input {} + SEP + output {} exceed length {}", n, m,
                 length);
    const int64_t scored = e.n_scored < 0 ? m : std::min(e.n_scored, m);
    int64_t* row = input.data() + b * length;
    for (int64_t j = 0; j < n; ++j) {
      SEQLAB_CHECK(e.input[j] >= 0 && e.input[j] < n_symbols,
                   "seq2seq: input symbol {} not in [0,{})", e.input[j], n_symbols);
      row[j] = e.input[j];
    }
    row[n] = sep;
    for (int64_t j = 0; j < m; ++j) {
      row[n + 1 + j] = blank;
      target[b * length + n + 1 + j] = e.output[j];
      mask[b * length + n + 1 + j] = j < scored;
    }
  }
  Batch out;
  out.input = rows_to_tensor(input, B, length);                 // [B,T]
  out.target = rows_to_tensor(target, B, length);               // [B,T]
  out.mask = rows_to_tensor(mask, B, length).to(torch::kBool);  // [B,T]
  return out;
}

int64_t Seq2SeqTask::input_length(int64_t length) const {
  // stream_length is increasing in n, so binary-search the largest n that fits.
  int64_t lo = min_input_length(), hi = length;
  SEQLAB_CHECK(stream_length(lo) <= length,
               "task {}: length {} is below its minimum {} (input length {} + SEP + output {})",
               name(), length, stream_length(lo), lo, output_length(lo));
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (stream_length(mid) <= length)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

Batch Seq2SeqTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "task {}: batch must be positive, got {}", name(), batch);
  const int64_t n = input_length(length);
  std::mt19937_64 rng(seed);
  std::vector<Seq2SeqExample> examples;
  examples.reserve(batch);
  for (int64_t b = 0; b < batch; ++b) examples.push_back(draw(rng, n));
  return pack_seq2seq(examples, length, n_symbols());
}

}  // namespace seqlab
