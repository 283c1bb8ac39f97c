// infer::generation_inputs, the checks seqlab generate and the Python FastModel share: what is
// consumed before sampling, when the end-of-text token is read, and the context-limit messages.
#include "seqlab/infer/engine.h"

#include "seqlab/core/error.h"

#include <gtest/gtest.h>

using seqlab::infer::generation_inputs;

namespace {

// An end-of-text source that counts its calls: a tokenizer without one throws when asked.
struct CountingEos {
  int calls = 0;
  std::function<int64_t()> fn() {
    return [this] {
      ++calls;
      return int64_t{7};
    };
  }
};

}  // namespace

TEST(GenerationInputs, PendingTokenThenPrompt) {
  CountingEos eos;
  EXPECT_EQ(generation_inputs(3, {4, 5}, eos.fn(), 10, -1, 4, true),
            (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(eos.calls, 0);
}

// A prompt is continued without reading the end-of-text token: an imported tokenizer that names
// none (issue: CI failed on a hub fixture) still generates from --prompt-ids.
TEST(GenerationInputs, EndOfTextReadOnlyForANewDocument) {
  CountingEos eos;
  EXPECT_EQ(generation_inputs(-1, {1, 2}, eos.fn(), 0, 32, 4, false), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(eos.calls, 0);
  auto throwing = []() -> int64_t { throw seqlab::Error("no end-of-text token"); };
  EXPECT_NO_THROW(generation_inputs(-1, {1}, throwing, 0, 32, 4, false));
  EXPECT_EQ(generation_inputs(-1, {}, eos.fn(), 0, 32, 4, false), (std::vector<int64_t>{7}));
  EXPECT_EQ(eos.calls, 1);
}

TEST(GenerationInputs, NothingToContinueIsAnError) {
  EXPECT_THROW(generation_inputs(-1, {}, nullptr, 0, 32, 4, false), seqlab::Error);
  CountingEos eos;  // past position 0 the state is mid-document: no end-of-text is inserted
  EXPECT_THROW(generation_inputs(-1, {}, eos.fn(), 5, 32, 4, true), seqlab::Error);
  EXPECT_EQ(eos.calls, 0);
}

// The last sampled token stays pending, so max_new tokens consume max_new - 1 positions.
TEST(GenerationInputs, ContextLimit) {
  EXPECT_NO_THROW(generation_inputs(-1, {1, 2, 3}, nullptr, 0, 8, 6, false));
  EXPECT_THROW(generation_inputs(-1, {1, 2, 3}, nullptr, 0, 8, 7, false), seqlab::Error);
  EXPECT_THROW(generation_inputs(-1, {1, 2, 3}, nullptr, 6, 8, 1, true), seqlab::Error);
  EXPECT_NO_THROW(generation_inputs(-1, {1, 2, 3}, nullptr, 100, -1, 1000, true));
  try {
    generation_inputs(-1, {1, 2, 3}, nullptr, 0, 8, 7, false);
  } catch (const seqlab::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 6 new tokens fit"), std::string::npos)
        << e.what();
  }
}
