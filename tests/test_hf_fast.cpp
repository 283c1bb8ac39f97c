// The fast decoder (infer/fast_model.h) on the imported Hugging Face fixtures (tests/data/hf/):
// token by token and by prefill, its logits equal the reference within 1e-4 relative and its
// greedy continuation equals the reference's. A fixture whose features the fast decoder does not
// run yet (fast_support's reason) is skipped with that reason, so these checks turn on by
// themselves when it learns them.
#include <gtest/gtest.h>

#include "hf_testing.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/model/hf_import.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

class HfFast : public ::testing::TestWithParam<std::string> {};

std::string fixture_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace

TEST_P(HfFast, MatchesReference) {
  auto lm = read_hf(hf_fixture(GetParam()).string());
  const auto why = infer::fast_support(*lm.model);
  if (!why.empty()) GTEST_SKIP() << GetParam() << ": " << why;
  const auto ref = hf_reference(GetParam());
  infer::FastModel fast(*lm.model);
  const int64_t V = fast.vocab_size(), T = static_cast<int64_t>(ref.tokens.size());
  ASSERT_EQ(V, ref.logits.size(1));

  auto state = fast.init_state();
  std::vector<float> logits(V);
  for (int64_t t = 0; t < T; ++t) {
    fast.step(ref.tokens[t], state, logits.data());
    EXPECT_LE(hf_rel_error(torch::from_blob(logits.data(), {V}), ref.logits[t]), 1e-4)
        << "position " << t;
  }
  std::vector<int64_t> greedy;
  for (size_t i = 0; i < ref.greedy.size(); ++i) {
    greedy.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
    fast.step(greedy.back(), state, logits.data());
  }
  EXPECT_EQ(greedy, ref.greedy);

  auto pre = fast.init_state();
  std::vector<float> last(V);
  fast.prefill(ref.tokens.data(), T, pre, last.data());
  EXPECT_LE(hf_rel_error(torch::from_blob(last.data(), {V}), ref.logits[T - 1]), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFast,
                         ::testing::Values("llama", "qwen2", "mistral", "gpt_neox", "gpt_neox_seq"),
                         fixture_name);
