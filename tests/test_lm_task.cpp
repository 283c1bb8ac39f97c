// The lm task: token streams built from a corpus, and windows cut from the train stream.
#include "seqlab/tasks/lm.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace seqlab;
using seqlab::testing::rows;
namespace fs = std::filesystem;

namespace {

// A corpus file of `n` distinct lines, in this test process's own directory.
std::string corpus_file(int n) {
  static const fs::path d = [] {
    auto p = fs::temp_directory_path() / ("seqlab_test_lm_task." + std::to_string(getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  const auto path = d / ("corpus" + std::to_string(n) + ".txt");
  std::ofstream out(path);
  for (int i = 0; i < n; ++i)
    out << "document " << i << (i % 3 ? " is short" : " is a bit longer") << "\n";
  return path.string();
}

TaskConfig lm_config(const std::string& corpus, int64_t max_len, const std::string& tok = "byte") {
  TaskConfig c;
  c.task = "lm";
  c.corpus = corpus;
  c.tokenizer = tok;
  c.max_len = max_len;
  return c;
}

}  // namespace

TEST(LmTask, StreamsAreTheSplitsDocumentsJoinedWithEos) {
  const auto path = corpus_file(200);
  auto task = make_task(lm_config(path, 16));
  const auto& lm = dynamic_cast<const LmTask&>(*task);
  EXPECT_EQ(task->name(), "lm");
  EXPECT_EQ(task->vocab_size(), 257);
  EXPECT_EQ(task->head(), "lm");
  EXPECT_EQ(task->n_classes(), 0);
  for (Split s : {Split::train, Split::valid, Split::test}) {
    std::vector<int64_t> want;
    for (const auto& doc : load_corpus(path, s)) {
      for (unsigned char c : doc) want.push_back(c);
      want.push_back(256);
    }
    EXPECT_FALSE(want.empty()) << split_name(s);
    EXPECT_EQ(lm.tokens(s), want) << split_name(s);
    EXPECT_EQ(&lm.tokens(s), &lm.tokens(s)) << "built once, then cached";
  }
}

TEST(LmTask, WindowsAreSlicesOfTheTrainStreamShiftedByOne) {
  auto task = make_task(lm_config(corpus_file(200), 16));
  const auto& s = dynamic_cast<const LmTask&>(*task).tokens(Split::train);
  const int64_t n = static_cast<int64_t>(s.size());
  for (int64_t T : {1, 7, 16, 40}) {
    auto b = task->sample(9, T, 100 + T);
    ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{9, T}));
    ASSERT_EQ(b.target.sizes(), (std::vector<int64_t>{9, T}));
    EXPECT_TRUE(b.mask.all().item<bool>());
    EXPECT_EQ(b.mask.scalar_type(), torch::kBool);
    const auto in = rows(b.input), tg = rows(b.target);
    for (int64_t i = 0; i < 9; ++i) {
      // The row is s[off .. off+T) for some offset, and its target s[off+1 .. off+T].
      bool found = false;
      for (int64_t off = 0; off + T < n && !found; ++off)
        found = std::equal(in[i].begin(), in[i].end(), s.begin() + off) &&
                std::equal(tg[i].begin(), tg[i].end(), s.begin() + off + 1);
      EXPECT_TRUE(found) << "T " << T << " row " << i << " is not a window of the train stream";
      for (int64_t t = 0; t + 1 < T; ++t) EXPECT_EQ(tg[i][t], in[i][t + 1]);
    }
  }
}

TEST(LmTask, SamplingIsDeterministicPerSeed) {
  auto task = make_task(lm_config(corpus_file(200), 16));
  auto a = task->sample(8, 16, 7), b = task->sample(8, 16, 7), c = task->sample(8, 16, 8);
  EXPECT_TRUE(torch::equal(a.input, b.input) && torch::equal(a.target, b.target));
  EXPECT_FALSE(torch::equal(a.input, c.input));
  // Another task object on the same corpus draws the same windows.
  auto again = make_task(lm_config(corpus_file(200), 16));
  EXPECT_TRUE(torch::equal(again->sample(8, 16, 7).input, a.input));
}

TEST(LmTask, BadOptionsAreErrors) {
  EXPECT_THROW(make_task(lm_config(corpus_file(200), 16, "nonsense-tokenizer")), Error);
  // Twenty short lines are a few hundred byte tokens: far too few for windows of 5000.
  try {
    make_task(lm_config(corpus_file(20), 5000));
    ADD_FAILURE() << "no error for a corpus shorter than --max-len";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too short"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_task(lm_config(corpus_file(200) + ".missing", 16)), Error);
  auto task = make_task(lm_config(corpus_file(200), 16));
  EXPECT_THROW(task->sample(0, 16, 1), Error);
  EXPECT_THROW(task->sample(2, 0, 1), Error);
  EXPECT_THROW(task->sample(2, 1 << 20, 1), Error);
}

TEST(LmTask, WordnetWindowsDecodeToGlosses) {
  if (!fs::exists("/usr/share/wordnet/data.noun") && !std::getenv("SEQLAB_WORDNET_DIR"))
    GTEST_SKIP() << "WordNet not installed (apt-get install wordnet-base)";
  auto task = make_task(lm_config("wordnet", 128));
  const auto& lm = dynamic_cast<const LmTask&>(*task);
  auto b = task->sample(4, 128, 3);
  for (const auto& row : rows(b.input)) {
    const auto text = lm.tokenizer().decode(row);
    EXPECT_GE(text.size(), 100u) << "at most one or two EOS in 128 bytes of glosses";
  }
  // About 11.5 MB of text in all, 90% of it train.
  EXPECT_GT(lm.tokens(Split::train).size(), 9'000'000u);
  EXPECT_LT(lm.tokens(Split::train).size(), 12'000'000u);
}
