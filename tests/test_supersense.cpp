// supersense / supersense_pos: every sampled row is checked against WordNet's raw data lines,
// parsed again here (offset, lex_filenum, gloss), with the split recomputed from the hash: the text
// is the definition of a synset of that split whose label is the target.
#include "seqlab/tasks/supersense.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include "split_testing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

bool have_wordnet() {
  return fs::exists(wordnet_dir() + "/data.noun");
}

using seqlab::testing::expected_split;

// definition text -> the (fine, coarse) labels of the synsets with that definition, per split,
// from the raw lines: field 2 is lex_filenum, the gloss follows " | ", the definition is the gloss
// up to its first `; "`.
struct Expected {
  std::array<std::map<std::string, std::set<std::pair<int64_t, int64_t>>>, 3> by_split;
};

const Expected& expected() {
  static const Expected e = [] {
    Expected out;
    const std::pair<const char*, char> files[] = {
        {"data.noun", 'n'}, {"data.verb", 'v'}, {"data.adj", 'a'}, {"data.adv", 'r'}};
    for (const auto& [file, pos] : files) {
      std::ifstream in(wordnet_dir() + "/" + file);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("  ", 0) == 0 || line.empty()) continue;
        const std::string offset = line.substr(0, 8);
        const int64_t lex = std::stoi(line.substr(9, 2));
        std::string gloss = line.substr(line.find(" | ") + 3);
        gloss.erase(0, gloss.find_first_not_of(' '));  // a few glosses start with two spaces
        gloss.erase(gloss.find_last_not_of(' ') + 1);
        size_t cut = gloss.find("; \"");
        std::string def = cut == std::string::npos || cut == 0 ? gloss : gloss.substr(0, cut);
        def.erase(def.find_last_not_of(' ') + 1);
        const int64_t coarse = pos == 'n' ? 0 : pos == 'v' ? 1 : pos == 'a' ? 2 : 3;
        const auto sp = expected_split(std::string(1, pos) + ":" + offset);
        out.by_split[static_cast<size_t>(sp)][def].insert({lex, coarse});
      }
    }
    return out;
  }();
  return e;
}

// The text of row i's valid tokens (byte tokenizer: token = byte).
std::string row_text(const Batch& b, int64_t i) {
  const auto in = seqlab::testing::rows(b.input.narrow(0, i, 1))[0];
  const auto v = seqlab::testing::rows(b.valid.narrow(0, i, 1))[0];
  std::string s;
  for (size_t t = 0; t < in.size() && v[t]; ++t) s.push_back(static_cast<char>(in[t]));
  return s;
}

}  // namespace

TEST(Supersense, RowsAreDefinitionsOfTheSplitWithTheirLabels) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  for (bool coarse : {false, true}) {
    SupersenseTask task(TaskConfig(), coarse);
    EXPECT_EQ(task.vocab_size(), 258);
    EXPECT_EQ(task.pad(), 257);
    EXPECT_EQ(task.n_classes(), coarse ? 4 : 45);
    EXPECT_EQ(static_cast<int64_t>(task.class_names().size()), task.n_classes());
    for (Split sp : {Split::train, Split::valid, Split::test}) {
      const int64_t B = 400, T = 1024;  // long enough for every definition: nothing is cut
      auto b = task.sample_split(B, T, 5, sp);
      ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{B, T}));
      ASSERT_EQ(b.valid.scalar_type(), torch::kBool);
      EXPECT_TRUE(b.mask.equal(b.valid));
      const auto& table = expected().by_split[static_cast<size_t>(sp)];
      const auto in = seqlab::testing::rows(b.input), v = seqlab::testing::rows(b.valid);
      std::set<int64_t> seen;
      for (int64_t i = 0; i < B; ++i) {
        const std::string text = row_text(b, i);
        const auto n = static_cast<int64_t>(text.size());
        ASSERT_GT(n, 0);
        ASSERT_LT(n, T);
        for (int64_t t = n; t < T; ++t) {
          ASSERT_EQ(v[i][t], 0) << "valid is a prefix";
          ASSERT_EQ(in[i][t], task.pad()) << "right padding";
        }
        const auto it = table.find(text);
        ASSERT_NE(it, table.end())
            << split_name(sp) << ": not a definition of this split: " << text;
        const int64_t target = b.target[i].item<int64_t>();
        bool ok = false;
        for (const auto& [fine, c] : it->second) ok |= (coarse ? c : fine) == target;
        ASSERT_TRUE(ok) << text << " labelled " << target;
        seen.insert(target);
      }
      if (sp == Split::train) {
        EXPECT_GE(seen.size(), coarse ? 4u : 25u);
      }
    }
  }
}

TEST(Supersense, TruncatesToTheLength) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  SupersenseTask task(TaskConfig(), false);
  const auto full = task.sample_split(64, 1024, 9, Split::valid);
  const auto cut = task.sample_split(64, 12, 9, Split::valid);
  EXPECT_TRUE(cut.target.equal(full.target)) << "the same examples at any length";
  for (int64_t i = 0; i < 64; ++i) {
    const std::string a = row_text(full, i), c = row_text(cut, i);
    EXPECT_EQ(c, a.substr(0, std::min<size_t>(a.size(), 12)));
  }
}

TEST(Supersense, ContractAndSplitsDiffer) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  SupersenseTask task(TaskConfig(), false);
  seqlab::testing::check_task_contract(task, 64);
  EXPECT_TRUE(task.sample(16, 64, 3).input.equal(task.sample_split(16, 64, 3, Split::train).input));
  EXPECT_FALSE(
      task.sample_split(16, 64, 3, Split::valid).input.equal(task.sample(16, 64, 3).input));
  const auto n = [&](Split s) { return static_cast<double>(task.examples(s).size()); };
  const double total = n(Split::train) + n(Split::valid) + n(Split::test);
  EXPECT_NEAR(n(Split::valid) / total, 0.05, 0.005);
  EXPECT_NEAR(n(Split::test) / total, 0.05, 0.005);
}

TEST(Supersense, RegisteredAndFast) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  TaskConfig c;
  c.task = "supersense";
  c.max_len = 64;
  const auto t0 = std::chrono::steady_clock::now();
  auto t = make_task(c);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
  EXPECT_EQ(t->name(), "supersense");
  EXPECT_EQ(t->head(), "classify");
  c.task = "supersense_pos";
  EXPECT_EQ(make_task(c)->n_classes(), 4);
}

TEST(Supersense, MissingWordNetNamesThePath) {
  const std::string dir = "/nonexistent/seqlab_wordnet";
  setenv("SEQLAB_WORDNET_DIR", dir.c_str(), 1);
  try {
    SupersenseTask t(TaskConfig(), false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/data.noun"), std::string::npos) << e.what();
  }
  unsetenv("SEQLAB_WORDNET_DIR");
}
