// The BPE trainer (src/seqlab/text/bpe_trainer.h): first merges counted by hand, every merge
// against a from-scratch recount, determinism, sizes, the files' round trip through the reader,
// and compression.
#include <gtest/gtest.h>

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/text/bpe_trainer.h"
#include "seqlab/text/pretokenize.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

BpeTrainOptions opts(int64_t vocab_size) {
  BpeTrainOptions o;
  o.vocab_size = vocab_size;
  o.progress = false;
  return o;
}

fs::path scratch(const std::string& name) {
  const auto d =
      fs::temp_directory_path() / ("seqlab_test_bpe_trainer." + std::to_string(getpid())) / name;
  fs::remove_all(d);
  return d;
}

// English-like documents: Zipf-distributed made-up words, capitals, punctuation, numbers.
std::vector<std::string> synthetic_corpus(int n_docs, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<std::string> syll = {"ka", "lo", "mi", "ther", "an",   "st", "ing", "re", "un",
                                         "ed", "qu", "is", "or",   "tion", "be", "ca",  "de"};
  std::vector<std::string> lexicon;
  for (int i = 0; i < 400; ++i) {
    std::string w;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) w += syll[rng() % syll.size()];
    lexicon.push_back(w);
  }
  std::vector<std::string> docs;
  for (int d = 0; d < n_docs; ++d) {
    std::string doc;
    const int n_words = 5 + static_cast<int>(rng() % 25);
    for (int i = 0; i < n_words; ++i) {
      // Zipf-like: rank r with probability ~ 1/(r+1).
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      const auto r = static_cast<size_t>(std::pow(400.0, u)) - 1;
      std::string w = lexicon[std::min<size_t>(r, lexicon.size() - 1)];
      if (i == 0) w[0] = static_cast<char>(std::toupper(w[0]));
      if (i > 0) doc += ' ';
      doc += w;
      if (rng() % 9 == 0) doc += ',';
      if (rng() % 23 == 0) doc += " " + std::to_string(rng() % 2000);
    }
    doc += rng() % 5 == 0 ? "?" : ".";
    docs.push_back(doc);
  }
  return docs;
}

// The slow, obvious trainer: recount every pair of every word after each merge. Same rules:
// the most frequent pair, ties to the smaller (left id, right id); a spelling already in the
// vocabulary keeps its id.
std::vector<BpeModel::Merge> naive_merges(const std::vector<std::string>& docs, int n_merges) {
  std::map<std::string, int64_t> freq;
  for (const auto& d : docs)
    for (const auto& p : pretokenize(d)) ++freq[p];
  std::vector<std::string> tokens;
  std::map<std::string, int32_t> id_of;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(1, static_cast<char>(b));
    id_of[tokens.back()] = b;
  }
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [w, c] : freq) {
    std::vector<int32_t> s;
    for (unsigned char b : w) s.push_back(b);
    words.emplace_back(s, c);
  }
  std::vector<BpeModel::Merge> merges;
  for (int m = 0; m < n_merges; ++m) {
    std::map<std::pair<int32_t, int32_t>, int64_t> count;
    for (const auto& [s, c] : words)
      for (size_t i = 0; i + 1 < s.size(); ++i) count[{s[i], s[i + 1]}] += c;
    std::pair<int32_t, int32_t> best{-1, -1};
    int64_t best_count = 0;
    for (const auto& [p, c] : count)
      if (c > best_count) best = p, best_count = c;
    if (best_count == 0) break;
    const std::string bytes = tokens[best.first] + tokens[best.second];
    if (!id_of.count(bytes)) {
      id_of[bytes] = static_cast<int32_t>(tokens.size());
      tokens.push_back(bytes);
    }
    const int32_t id = id_of[bytes];
    merges.push_back({best.first, best.second, id});
    for (auto& [s, c] : words) {
      std::vector<int32_t> out;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == best.first && s[i + 1] == best.second) {
          out.push_back(id);
          i += 2;
        } else {
          out.push_back(s[i++]);
        }
      }
      s = out;
    }
  }
  return merges;
}

}  // namespace

TEST(BpeTrainer, FirstMergesOfATinyCorpusCountedByHand) {
  // Pieces: "hug", " hug" x2, " pug", " pun", " bun", " hugs". Pair counts: u+g 5, h+u 4, " "+h 3.
  // After u+g: h+ug 4. After h+ug: " "+hug 3. Then " "+p and u+n tie at 2; " " (32) < u (117).
  const auto m = train_bpe({"hug hug hug pug pun bun hugs"}, opts(256 + 5 + 1));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"u", "g"}, {"h", "ug"}, {" ", "hug"}, {" ", "p"}, {"u", "n"}};
  ASSERT_EQ(m.merges.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(m.tokens[m.merges[i].left], want[i].first) << "merge " << i;
    EXPECT_EQ(m.tokens[m.merges[i].right], want[i].second) << "merge " << i;
    EXPECT_EQ(m.merges[i].result, 256 + static_cast<int32_t>(i));
  }
  EXPECT_EQ(m.tokens.size(), 262u);
  EXPECT_EQ(m.eos_id, 261);
  EXPECT_EQ(m.tokens[261], "<|endoftext|>");
}

TEST(BpeTrainer, EveryMergeEqualsAFromScratchRecount) {
  for (uint32_t seed : {1u, 2u}) {
    const auto docs = synthetic_corpus(150, seed);
    const auto m = train_bpe(docs, opts(256 + 120 + 1));
    const auto want = naive_merges(docs, static_cast<int>(m.merges.size()));
    ASSERT_EQ(m.merges.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::tie(m.merges[i].left, m.merges[i].right, m.merges[i].result),
                std::tie(want[i].left, want[i].right, want[i].result))
          << "seed " << seed << ", merge " << i << ": got '" << m.tokens[m.merges[i].left]
          << "' + '" << m.tokens[m.merges[i].right] << "'";
    }
  }
}

TEST(BpeTrainer, SizesAndConsistency) {
  const auto docs = synthetic_corpus(800, 3);
  const auto m = train_bpe(docs, opts(700));
  EXPECT_EQ(m.tokens.size(), 700u);
  EXPECT_EQ(m.eos_id, 699);
  // One merge per new token, plus merges that re-spell an existing token.
  std::set<int32_t> made;
  size_t respelled = 0;
  for (const auto& mg : m.merges) {
    EXPECT_EQ(m.tokens[mg.result], m.tokens[mg.left] + m.tokens[mg.right]);
    EXPECT_TRUE(mg.left < 699 && mg.right < 699 && mg.result >= 256 && mg.result < 699);
    if (!made.insert(mg.result).second) ++respelled;
  }
  EXPECT_EQ(m.merges.size(), 700u - 257u + respelled);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(m.tokens[b], std::string(1, static_cast<char>(b)));
}

TEST(BpeTrainer, Deterministic) {
  const auto docs = synthetic_corpus(400, 4);
  const auto a = scratch("det_a"), b = scratch("det_b");
  save_bpe(train_bpe(docs, opts(500)), a.string());
  save_bpe(train_bpe(docs, opts(500)), b.string());
  EXPECT_EQ(read_file((a / "vocab.json").string()), read_file((b / "vocab.json").string()));
  EXPECT_EQ(read_file((a / "merges.txt").string()), read_file((b / "merges.txt").string()));
}

TEST(BpeTrainer, FilesLoadBackAndRoundTrip) {
  const auto docs = synthetic_corpus(600, 5);
  const auto m = train_bpe(docs, opts(600));
  const auto dir = scratch("roundtrip");
  save_bpe(m, dir.string());
  const auto loaded = make_tokenizer(dir.string());
  EXPECT_EQ(loaded->vocab_size(), 600);
  EXPECT_EQ(loaded->eos_id(), 599);
  EXPECT_EQ(loaded->decode({599}), "<|endoftext|>");
  const auto& lm = dynamic_cast<const BpeTokenizer&>(*loaded).model();
  EXPECT_EQ(lm.tokens, m.tokens);
  ASSERT_EQ(lm.merges.size(), m.merges.size());
  for (size_t i = 0; i < m.merges.size(); ++i)
    EXPECT_EQ(std::tie(lm.merges[i].left, lm.merges[i].right, lm.merges[i].result),
              std::tie(m.merges[i].left, m.merges[i].right, m.merges[i].result));
  const BpeTokenizer memory(m, "memory");
  for (const auto& d : docs) {
    const auto ids = loaded->encode(d);
    ASSERT_EQ(ids, memory.encode(d));
    ASSERT_EQ(loaded->decode(ids), d);
  }
  std::mt19937 rng(6);
  for (int i = 0; i < 500; ++i) {
    std::string s;
    for (int k = static_cast<int>(rng() % 50); k > 0; --k) s.push_back(static_cast<char>(rng()));
    ASSERT_EQ(loaded->decode(loaded->encode(s)), s);
  }
}

TEST(BpeTrainer, CompressesBetterThanBytes) {
  const auto train = synthetic_corpus(2000, 7), held_out = synthetic_corpus(300, 8);
  const BpeTokenizer t(train_bpe(train, opts(1000)), "trained");
  size_t bytes = 0, tokens = 0;
  for (const auto& d : held_out) {
    bytes += d.size();
    tokens += t.encode(d).size();
  }
  EXPECT_LT(static_cast<double>(tokens), 0.4 * static_cast<double>(bytes))
      << tokens << " tokens for " << bytes << " bytes";
}

TEST(BpeTrainer, SmallCorpusStopsEarlyAndBadSizesFail) {
  const auto m = train_bpe({"ab ab"}, opts(1000));
  // a+b, then " "+ab; nothing left to pair.
  EXPECT_EQ(m.merges.size(), 2u);
  EXPECT_EQ(m.tokens.size(), 259u);
  EXPECT_EQ(m.tokens[m.eos_id], "<|endoftext|>");
  EXPECT_EQ(train_bpe({}, opts(300)).tokens.size(), 257u);
  try {
    train_bpe({"abc"}, opts(256));
    ADD_FAILURE() << "no error for vocab size 256";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab size 256"), std::string::npos) << e.what();
  }
}
