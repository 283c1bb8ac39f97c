// WordNet 3.0 data files -> synsets (see wordnet.h).
//
// One data-file line (wndb(5WN)), fields separated by single spaces:
//
//   synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...] p_cnt [ptr ...]
//   [f_cnt + f_num w_num ...] | gloss
//
// lex_filenum is two decimal digits, w_cnt two hex digits, lex_id one hex digit, p_cnt three
// decimal digits; each pointer is four fields: symbol, offset, pos (n v a s r), and source/target
// as four hex digits (two for the source word number, two for the target's; 0000 = semantic, synset
// to synset). Every line of data.verb (only) then lists f_cnt frames of three fields. The license
// header at the top of each file is the lines starting with two spaces.
#include "seqlab/text/wordnet.h"

#include "seqlab/core/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace seqlab {

namespace {

const char* const kLexnames[kWordNetLexFiles] = {
    "adj.all",          "adj.pert",           "adv.all",
    "noun.Tops",        "noun.act",           "noun.animal",
    "noun.artifact",    "noun.attribute",     "noun.body",
    "noun.cognition",   "noun.communication", "noun.event",
    "noun.feeling",     "noun.food",          "noun.group",
    "noun.location",    "noun.motive",        "noun.object",
    "noun.person",      "noun.phenomenon",    "noun.plant",
    "noun.possession",  "noun.process",       "noun.quantity",
    "noun.relation",    "noun.shape",         "noun.state",
    "noun.substance",   "noun.time",          "verb.body",
    "verb.change",      "verb.cognition",     "verb.communication",
    "verb.competition", "verb.consumption",   "verb.contact",
    "verb.creation",    "verb.emotion",       "verb.motion",
    "verb.perception",  "verb.possession",    "verb.social",
    "verb.stative",     "verb.weather",       "adj.ppl"};

const char* kHint =
    " (WordNet 3.0 comes with Debian's wordnet-base package; $SEQLAB_WORDNET_DIR overrides "
    "/usr/share/wordnet)";

std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  SEQLAB_CHECK(f, "WordNet file {} cannot be opened: {}{}", path, std::strerror(errno), kHint);
  std::string data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, got);
  const bool bad = std::ferror(f);
  std::fclose(f);
  SEQLAB_CHECK(!bad, "WordNet file {} could not be read", path);
  return data;
}

uint64_t key_of(char pos, uint32_t offset) {
  if (pos == 's') pos = 'a';
  return (static_cast<uint64_t>(static_cast<unsigned char>(pos)) << 32) | offset;
}

// A cursor over the space-separated fields of one line; errors name the file and line.
struct Cursor {
  std::string_view rest;
  const std::string& path;
  int64_t line;

  std::string_view next(const char* what) {
    const size_t b = rest.find_first_not_of(' ');
    SEQLAB_CHECK(b != std::string_view::npos, "{}:{}: line ends before its {}", path, line, what);
    rest.remove_prefix(b);
    const size_t e = std::min(rest.find(' '), rest.size());
    const std::string_view f = rest.substr(0, e);
    rest.remove_prefix(e);
    return f;
  }
  int64_t number(std::string_view f, const char* what, int base) const {
    SEQLAB_CHECK(!f.empty() && f.size() <= 10, "{}:{}: bad {} '{}'", path, line, what, f);
    int64_t v = 0;
    for (char c : f) {
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : 99;
      SEQLAB_CHECK(d < base, "{}:{}: {} '{}' is not a base-{} number", path, line, what, f, base);
      v = v * base + d;
    }
    return v;
  }
  int64_t number(const char* what, int base) { return number(next(what), what, base); }
};

Synset parse_line(std::string_view ln, char pos, const std::string& path, int64_t line) {
  Cursor c{ln, path, line};
  Synset s;
  const std::string_view off = c.next("synset_offset");
  SEQLAB_CHECK(off.size() == 8, "{}:{}: synset_offset '{}' is not 8 digits", path, line, off);
  s.offset = static_cast<uint32_t>(c.number(off, "synset_offset", 10));
  s.pos = pos;
  s.split = wordnet_split(pos, s.offset);
  s.lex_filenum = static_cast<int>(c.number("lex_filenum", 10));
  SEQLAB_CHECK(s.lex_filenum < kWordNetLexFiles, "{}:{}: lex_filenum {} is not in 0..{}", path,
               line, s.lex_filenum, kWordNetLexFiles - 1);
  const std::string_view ss = c.next("ss_type");
  SEQLAB_CHECK(ss.size() == 1 && std::strchr("nvasr", ss[0]), "{}:{}: unknown ss_type '{}'", path,
               line, ss);
  s.ss_type = ss[0];
  SEQLAB_CHECK((pos == 'a') ? (s.ss_type == 'a' || s.ss_type == 's') : s.ss_type == pos,
               "{}:{}: ss_type '{}' in a data file of pos '{}'", path, line, ss, pos);
  const int64_t w_cnt = c.number("w_cnt", 16);
  SEQLAB_CHECK(w_cnt >= 1, "{}:{}: synset without words", path, line);
  for (int64_t w = 0; w < w_cnt; ++w) {
    std::string_view word = c.next("word");
    c.number("lex_id", 16);
    const size_t open = word.rfind('(');  // an adjective's marker: "(a)", "(p)" or "(ip)"
    if (open != word.npos && open > 0 && word.back() == ')') {
      const std::string_view m = word.substr(open);
      if (m == "(a)" || m == "(p)" || m == "(ip)") word.remove_suffix(m.size());
    }
    s.lemmas.emplace_back(word);
  }
  const int64_t p_cnt = c.number("p_cnt", 10);
  s.pointers.reserve(p_cnt);
  for (int64_t p = 0; p < p_cnt; ++p) {
    WordNetPointer q;
    q.symbol = std::string(c.next("pointer symbol"));
    const std::string_view to = c.next("pointer offset");
    SEQLAB_CHECK(to.size() == 8, "{}:{}: pointer offset '{}' is not 8 digits", path, line, to);
    q.offset = static_cast<uint32_t>(c.number(to, "pointer offset", 10));
    const std::string_view tp = c.next("pointer pos");
    SEQLAB_CHECK(tp.size() == 1 && std::strchr("nvasr", tp[0]), "{}:{}: unknown pointer pos '{}'",
                 path, line, tp);
    q.pos = tp[0] == 's' ? 'a' : tp[0];
    const std::string_view st = c.next("pointer source/target");
    SEQLAB_CHECK(st.size() == 4, "{}:{}: pointer source/target '{}' is not 4 hex digits", path,
                 line, st);
    q.source = static_cast<int>(c.number(st.substr(0, 2), "pointer source", 16));
    q.target = static_cast<int>(c.number(st.substr(2, 2), "pointer target", 16));
    SEQLAB_CHECK(q.source <= w_cnt, "{}:{}: pointer from word {} of a {}-word synset", path, line,
                 q.source, w_cnt);
    s.pointers.push_back(std::move(q));
  }
  if (pos == 'v') {
    const int64_t f_cnt = c.number("f_cnt", 10);
    for (int64_t k = 0; k < f_cnt; ++k) {
      const std::string_view plus = c.next("frame '+'");
      SEQLAB_CHECK(plus == "+", "{}:{}: frame {} starts with '{}', not '+'", path, line, k, plus);
      c.number("f_num", 10);
      c.number("w_num", 16);
    }
  }
  const std::string_view bar = c.next("gloss separator '|'");
  SEQLAB_CHECK(bar == "|", "{}:{}: expected '|' before the gloss, got '{}'", path, line, bar);
  std::string_view g = c.rest;
  const size_t b = g.find_first_not_of(' ');
  g = b == g.npos ? std::string_view() : g.substr(b);
  while (!g.empty() && (g.back() == ' ' || g.back() == '\r')) g.remove_suffix(1);
  s.gloss = std::string(g);
  return s;
}

}  // namespace

int64_t wordnet_pos_class(char pos) {
  switch (pos) {
    case 'n':
      return 0;
    case 'v':
      return 1;
    case 'a':
    case 's':
      return 2;
    default:
      return 3;
  }
}

const char* wordnet_lexname(int64_t lex_filenum) {
  SEQLAB_CHECK(lex_filenum >= 0 && lex_filenum < kWordNetLexFiles,
               "lexicographer file {} is not in 0..{}", lex_filenum, kWordNetLexFiles - 1);
  return kLexnames[lex_filenum];
}

Split wordnet_split(char pos, uint32_t offset) {
  char key[16];
  std::snprintf(key, sizeof key, "%c:%08u", pos == 's' ? 'a' : pos, offset);
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64, as text/corpus.cpp
  for (const char* p = key; *p; ++p) {
    h ^= static_cast<unsigned char>(*p);
    h *= 0x100000001b3ULL;
  }
  const uint64_t r = h % 100;
  return r < 90 ? Split::train : r < 95 ? Split::valid : Split::test;
}

std::string_view Synset::definition() const {
  std::string_view g = gloss;
  const size_t e = g.find("; \"");
  if (e == g.npos || e == 0) return g;
  g = g.substr(0, e);
  while (!g.empty() && g.back() == ' ') g.remove_suffix(1);
  return g;
}

WordNet::WordNet(const std::string& dir) : dir_(dir) {
  struct PosFile {
    const char* name;
    char pos;
  };
  static const PosFile kFiles[] = {
      {"data.noun", 'n'}, {"data.verb", 'v'}, {"data.adj", 'a'}, {"data.adv", 'r'}};
  synsets_.reserve(120000);
  for (const auto& pf : kFiles) {
    const std::string path = dir + "/" + pf.name;
    const std::string data = read_file(path);
    std::string_view all(data);
    int64_t line = 0;
    while (!all.empty()) {
      const size_t e = std::min(all.find('\n'), all.size());
      const std::string_view ln = all.substr(0, e);
      all.remove_prefix(std::min(e + 1, all.size()));
      ++line;
      if (ln.rfind("  ", 0) == 0 || ln.empty() || ln == "\r") continue;
      synsets_.push_back(parse_line(ln, pf.pos, path, line));
      const auto& s = synsets_.back();
      const bool fresh =
          index_.emplace(key_of(s.pos, s.offset), static_cast<int32_t>(synsets_.size() - 1)).second;
      SEQLAB_CHECK(fresh, "{}:{}: synset offset {:08d} appears twice", path, line, s.offset);
    }
  }
  SEQLAB_CHECK(!synsets_.empty(), "WordNet files in {} hold no synsets{}", dir, kHint);
  for (auto& s : synsets_)
    for (auto& p : s.pointers) {
      const int64_t i = find(p.pos, p.offset);
      SEQLAB_CHECK(i >= 0,
                   "WordNet in {}: synset {}:{:08d} points ({}) to {}:{:08d}, which does not "
                   "exist",
                   dir, s.pos, s.offset, p.symbol, p.pos, p.offset);
      p.index = static_cast<int32_t>(i);
    }
}

int64_t WordNet::find(char pos, uint32_t offset) const {
  const auto it = index_.find(key_of(pos, offset));
  return it == index_.end() ? -1 : it->second;
}

std::string wordnet_dir() {
  const char* env = std::getenv("SEQLAB_WORDNET_DIR");
  return env && *env ? env : "/usr/share/wordnet";
}

std::shared_ptr<const WordNet> load_wordnet() {
  static std::mutex mu;
  static std::unordered_map<std::string, std::weak_ptr<const WordNet>> cache;
  const std::string dir = wordnet_dir();
  std::lock_guard<std::mutex> lock(mu);
  if (auto live = cache[dir].lock()) return live;
  auto wn = std::make_shared<const WordNet>(dir);
  cache[dir] = wn;
  return wn;
}

}  // namespace seqlab
