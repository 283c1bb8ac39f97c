// pair_nli: every sampled pair's label is checked against WordNet's pointers, parsed again here
// from the raw data lines; the row's text against the two definitions; the premise's split against
// the hash; the classes against exact balance.
#include "seqlab/tasks/pair_nli.h"

#include "seqlab/tasks/registry.h"
#include "synthetic_task_testing.h"

#include "split_testing.h"

#include <gtest/gtest.h>

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

// A synset from its raw line: "pos:offset" keys of its pointer targets by symbol, and definition.
struct Raw {
  std::multimap<std::string, std::string> pointers;  // symbol -> "p:offset" ('s' read as 'a')
  std::string definition;
};

const std::map<std::string, Raw>& raw() {
  static const std::map<std::string, Raw> m = [] {
    std::map<std::string, Raw> out;
    const std::pair<const char*, char> files[] = {
        {"data.noun", 'n'}, {"data.verb", 'v'}, {"data.adj", 'a'}, {"data.adv", 'r'}};
    for (const auto& [file, pos] : files) {
      std::ifstream in(wordnet_dir() + "/" + file);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("  ", 0) == 0 || line.empty()) continue;
        const size_t bar = line.find(" | ");
        std::istringstream f(line.substr(0, bar));
        std::string offset, lex, type, tok;
        int w_cnt = 0, p_cnt = 0;
        f >> offset >> lex >> type >> std::hex >> w_cnt >> std::dec;
        for (int w = 0; w < 2 * w_cnt; ++w) f >> tok;
        f >> p_cnt;
        Raw r;
        for (int p = 0; p < p_cnt; ++p) {
          std::string sym, off, ppos, st;
          f >> sym >> off >> ppos >> st;
          r.pointers.emplace(sym, (ppos == "s" ? std::string("a") : ppos) + ":" + off);
        }
        std::string gloss = line.substr(bar + 3);
        gloss.erase(0, gloss.find_first_not_of(' '));  // a few glosses start with two spaces
        gloss.erase(gloss.find_last_not_of(' ') + 1);
        const size_t cut = gloss.find("; \"");
        r.definition = cut == std::string::npos || cut == 0 ? gloss : gloss.substr(0, cut);
        r.definition.erase(r.definition.find_last_not_of(' ') + 1);
        out[std::string(1, pos) + ":" + offset] = std::move(r);
      }
    }
    return out;
  }();
  return m;
}

bool points(const std::string& a, const std::string& b, std::initializer_list<const char*> syms) {
  const auto& r = raw().at(a);
  for (const char* s : syms) {
    auto [lo, hi] = r.pointers.equal_range(s);
    for (auto it = lo; it != hi; ++it)
      if (it->second == b) return true;
  }
  return false;
}

bool any_pointer(const std::string& a, const std::string& b) {
  for (const auto& [sym, to] : raw().at(a).pointers)
    if (to == b) return true;
  return false;
}

// Is b reachable from a through @, @i and * pointers?
bool ancestor(const std::string& a, const std::string& b) {
  std::set<std::string> seen{a};
  std::vector<std::string> todo{a};
  while (!todo.empty()) {
    const std::string u = todo.back();
    todo.pop_back();
    for (const auto& [sym, to] : raw().at(u).pointers) {
      if (sym != "@" && sym != "@i" && sym != "*") continue;
      if (to == b) return true;
      if (seen.insert(to).second) todo.push_back(to);
    }
  }
  return false;
}

std::string key(const Synset& s) {
  char k[16];
  std::snprintf(k, sizeof k, "%c:%08u", s.pos, s.offset);
  return k;
}

}  // namespace

TEST(PairNli, LabelsFollowWordNetPointers) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  PairNliTask task{TaskConfig()};
  EXPECT_EQ(task.vocab_size(), 259);
  EXPECT_EQ(task.sep(), 257);
  EXPECT_EQ(task.pad(), 258);
  const auto& syn = task.wordnet().synsets();
  for (Split sp : {Split::train, Split::valid, Split::test}) {
    const int64_t B = 300, T = 1024;
    const auto pairs = task.draw_pairs(B, 21, sp);
    const auto b = task.sample_split(B, T, 21, sp);
    const auto in = seqlab::testing::rows(b.input), v = seqlab::testing::rows(b.valid);
    std::array<int64_t, 3> per_label{};
    std::array<std::map<char, int64_t>, 3> hyp_pos;
    for (int64_t i = 0; i < B; ++i) {
      const std::string a = key(syn[pairs[i].premise]), h = key(syn[pairs[i].hypothesis]);
      const int64_t label = b.target[i].item<int64_t>();
      ASSERT_EQ(label, pairs[i].label);
      ++per_label[label];
      hyp_pos[label][h[0]]++;
      ASSERT_EQ(expected_split(a), sp) << "premise " << a << " is not in " << split_name(sp);
      // The row: premise definition, SEP, hypothesis definition, PAD.
      std::string text;
      int64_t t = 0;
      for (; t < T && v[i][t]; ++t)
        text.push_back(in[i][t] == task.sep() ? '\x01' : static_cast<char>(in[i][t]));
      for (int64_t u = t; u < T; ++u) ASSERT_EQ(in[i][u], task.pad());
      ASSERT_EQ(text, raw().at(a).definition + "\x01" + raw().at(h).definition);
      switch (label) {
        case PairNliTask::kEntailment:
          ASSERT_TRUE(points(a, h, {"@", "@i", "*"})) << a << " -> " << h;
          break;
        case PairNliTask::kContradiction:
          ASSERT_TRUE(points(a, h, {"!"})) << a << " -> " << h;
          break;
        default:
          ASSERT_EQ(a[0], h[0]) << "neutral pairs share the part of speech";
          ASSERT_NE(a, h);
          ASSERT_FALSE(any_pointer(a, h) || any_pointer(h, a)) << a << " ~ " << h;
          ASSERT_FALSE(ancestor(a, h) || ancestor(h, a)) << a << " ~ " << h;
      }
    }
    EXPECT_EQ(per_label, (std::array<int64_t, 3>{100, 100, 100}));
    // The neutral hypotheses mix parts of speech like the other two classes put together.
    EXPECT_GT(hyp_pos[1]['a'], 10);
    EXPECT_GT(hyp_pos[1]['n'], 10);
  }
}

TEST(PairNli, TruncationKeepsBothSides) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  PairNliTask task{TaskConfig()};
  const int64_t B = 60;
  for (int64_t T : {9, 20, 41}) {
    const auto full = task.sample(B, 1024, 4), cut = task.sample(B, T, 4);
    EXPECT_TRUE(full.target.equal(cut.target));
    const auto fi = seqlab::testing::rows(full.input), ci = seqlab::testing::rows(cut.input);
    const auto fv = seqlab::testing::rows(full.valid), cv = seqlab::testing::rows(cut.valid);
    for (int64_t i = 0; i < B; ++i) {
      auto split_row = [&](const std::vector<int64_t>& r, const std::vector<int64_t>& valid) {
        std::vector<int64_t> p, h;
        bool after = false;
        for (size_t t = 0; t < r.size() && valid[t]; ++t) {
          if (r[t] == task.sep()) {
            EXPECT_FALSE(after) << "one SEP";
            after = true;
          } else {
            (after ? h : p).push_back(r[t]);
          }
        }
        EXPECT_TRUE(after) << "SEP kept";
        return std::pair{p, h};
      };
      const auto [fp, fh] = split_row(fi[i], fv[i]);
      const auto [cp, ch] = split_row(ci[i], cv[i]);
      // Each side is a prefix of the full side, at least half the budget when it was cut.
      ASSERT_TRUE(cp.size() <= fp.size() && std::equal(cp.begin(), cp.end(), fp.begin()));
      ASSERT_TRUE(ch.size() <= fh.size() && std::equal(ch.begin(), ch.end(), fh.begin()));
      ASSERT_LE(static_cast<int64_t>(cp.size() + ch.size()) + 1, T);
      const size_t half = (T - 1) / 2;
      if (cp.size() < fp.size()) {
        ASSERT_GE(cp.size(), std::min(half, fp.size()));
      }
      if (ch.size() < fh.size()) {
        ASSERT_GE(ch.size(), std::min(half, fh.size()));
      }
      if (cp.size() < fp.size() || ch.size() < fh.size()) {
        EXPECT_EQ(static_cast<int64_t>(cp.size() + ch.size()) + 1, T) << "the budget is used";
      }
    }
  }
}

TEST(PairNli, ContractAndRegistry) {
  if (!have_wordnet()) GTEST_SKIP() << "no WordNet";
  PairNliTask task{TaskConfig()};
  seqlab::testing::check_task_contract(task, 96);
  for (Split sp : {Split::train, Split::valid, Split::test}) {
    EXPECT_GT(task.pairs(sp, PairNliTask::kEntailment).size(), 1000u);
    EXPECT_GT(task.pairs(sp, PairNliTask::kContradiction).size(), 100u);
  }
  TaskConfig c;
  c.task = "pair_nli";
  c.max_len = 128;
  EXPECT_EQ(make_task(c)->n_classes(), 3);
  c.max_len = 8;
  EXPECT_THROW(make_task(c), Error);
}
