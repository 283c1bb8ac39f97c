#include "seqlab/tasks/stack_manipulation.h"

namespace seqlab {

Seq2SeqExample StackManipulationTask::draw(std::mt19937_64& rng, int64_t n) const {
  Seq2SeqExample e;
  e.input.resize(n);
  const int64_t s = 1 + draw_below(rng, n - 1);
  std::vector<int64_t> stack;  // bottom .. top
  for (int64_t j = 0; j < s; ++j) stack.push_back(e.input[j] = draw_below(rng, 2));
  for (int64_t j = s; j < n; ++j) {
    e.input[j] = kPop + draw_below(rng, 3);
    if (e.input[j] != kPop)
      stack.push_back(e.input[j] - kPushA);
    else if (!stack.empty())
      stack.pop_back();
  }
  e.output.assign(stack.rbegin(), stack.rend());
  e.output.resize(n + 1, kEmpty);
  e.n_scored = static_cast<int64_t>(stack.size()) + 1;
  return e;
}

}  // namespace seqlab
