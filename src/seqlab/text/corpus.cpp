// Corpus loading: WordNet 3.0 data files and plain-text files (see corpus.h).
//
// WordNet data-file lines (wndb(5WN)), one synset per line, fields separated by single spaces:
//
//   synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...] p_cnt [ptr ...]
//   [f_cnt + f_num w_num ...] | gloss
//
// w_cnt is two hex digits and lex_id one hex digit; p_cnt is three decimal digits and each pointer
// is four fields (symbol, offset, pos, source/target); every line of data.verb (only) then lists
// f_cnt (two decimal digits) frames of three fields ("+ f_num w_num", w_num in hex). Words use '_'
// for spaces, and adjectives may carry a syntactic marker glued to the word: "(a)", "(p)" or
// "(ip)". The gloss is the definition followed by its quoted examples, as one string; the files
// pad it with trailing spaces. The license header at the top of each file is the lines starting
// with two spaces.
//
// The whole of WordNet (about 21 MB in 117,659 synsets) is read with one fread per file and parsed
// in place with string_views, so a split loads in a fraction of a second.
#include "seqlab/text/corpus.h"

#include "seqlab/core/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string_view>

namespace seqlab {

Split parse_split(const std::string& name) {
  if (name == "train") return Split::train;
  if (name == "valid") return Split::valid;
  if (name == "test") return Split::test;
  fail("unknown split '{}' (expected train, valid or test)", name);
}

const char* split_name(Split s) {
  switch (s) {
    case Split::train:
      return "train";
    case Split::valid:
      return "valid";
    case Split::test:
      return "test";
  }
  return "?";
}

namespace {

// FNV-1a, 64 bits: a fixed function on every platform and standard library (std::hash is not), so
// the splits never change under the user.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Split split_of(std::string_view key) {
  const uint64_t r = fnv1a(key) % 100;
  return r < 90 ? Split::train : r < 95 ? Split::valid : Split::test;
}

// The whole file, or an error naming it. `what` says whose file it is ("WordNet", "corpus").
std::string read_all(const std::string& path, const char* what, const char* hint) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  SEQLAB_CHECK(f, "{} file {} cannot be opened: {}{}", what, path, std::strerror(errno), hint);
  std::string data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, got);
  const bool bad = std::ferror(f);
  std::fclose(f);
  SEQLAB_CHECK(!bad, "{} file {} could not be read", what, path);
  return data;
}

// Bytes that are not part of a well-formed UTF-8 sequence (overlongs, surrogates and code points
// above U+10FFFF count as invalid).
size_t invalid_utf8_bytes(std::string_view s) {
  size_t bad = 0, i = 0;
  const size_t n = s.size();
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char d = s[i + k];
      ok = (d & 0xC0) == 0x80;
      cp = (cp << 6) | (d & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      i += len;
    } else {
      ++bad;
      ++i;
    }
  }
  return bad;
}

// ---- WordNet ----

// A cursor over the space-separated fields of one data-file line.
struct Fields {
  std::string_view rest;
  const std::string* path;
  int64_t line;

  std::string_view next(const char* what) {
    const size_t b = rest.find_first_not_of(' ');
    SEQLAB_CHECK(b != std::string_view::npos, "{}:{}: line ends before its {}", *path, line, what);
    rest.remove_prefix(b);
    const size_t e = std::min(rest.find(' '), rest.size());
    std::string_view f = rest.substr(0, e);
    rest.remove_prefix(e);
    return f;
  }
  int64_t number(const char* what, int base) {
    const std::string_view f = next(what);
    int64_t v = 0;
    for (char c : f) {
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : 99;
      SEQLAB_CHECK(d < base, "{}:{}: {} '{}' is not a base-{} number", *path, line, what, f, base);
      v = v * base + d;
    }
    return v;
  }
};

// Parses one synset line (checking every field up to the gloss) and sets `split` from its key
// "pos:offset". When the synset is in split `want`, writes its document to `doc` and returns true.
bool parse_synset(std::string_view ln, char pos, const std::string& path, int64_t line_no,
                  Split want, std::string& key, std::string& doc) {
  Fields f{ln, &path, line_no};
  const std::string_view offset = f.next("synset_offset");
  SEQLAB_CHECK(offset.size() == 8 && offset.find_first_not_of("0123456789") == offset.npos,
               "{}:{}: synset_offset '{}' is not 8 digits", path, line_no, offset);
  key.assign(1, pos);
  key += ':';
  key.append(offset);
  const bool keep = split_of(key) == want;
  f.next("lex_filenum");
  const std::string_view ss_type = f.next("ss_type");
  SEQLAB_CHECK(ss_type.size() == 1 && std::strchr("nvasr", ss_type[0]),
               "{}:{}: unknown ss_type '{}'", path, line_no, ss_type);
  const int64_t w_cnt = f.number("w_cnt", 16);
  SEQLAB_CHECK(w_cnt >= 1, "{}:{}: synset without words", path, line_no);
  doc.clear();
  for (int64_t w = 0; w < w_cnt; ++w) {
    std::string_view word = f.next("word");
    f.number("lex_id", 16);
    // An adjective's syntactic marker, e.g. "galore(ip)", is not part of the lemma.
    const size_t open = word.rfind('(');
    if (open != word.npos && open > 0 && word.back() == ')') {
      const std::string_view m = word.substr(open);
      if (m == "(a)" || m == "(p)" || m == "(ip)") word.remove_suffix(m.size());
    }
    if (!keep) continue;
    if (w > 0) doc.append(", ");
    for (char c : word) doc.push_back(c == '_' ? ' ' : c);
  }
  const int64_t p_cnt = f.number("p_cnt", 10);
  for (int64_t p = 0; p < p_cnt; ++p) {
    f.next("pointer_symbol");
    f.next("pointer offset");
    f.next("pointer pos");
    f.next("pointer source/target");
  }
  if (pos == 'v') {  // every line of data.verb lists its generic sentence frames
    const int64_t f_cnt = f.number("f_cnt", 10);
    for (int64_t k = 0; k < f_cnt; ++k) {
      const std::string_view plus = f.next("frame '+'");
      SEQLAB_CHECK(plus == "+", "{}:{}: frame {} starts with '{}', not '+'", path, line_no, k,
                   plus);
      f.number("f_num", 10);
      f.number("w_num", 16);
    }
  }
  const std::string_view bar = f.next("gloss separator '|'");
  SEQLAB_CHECK(bar == "|", "{}:{}: expected '|' before the gloss, got '{}'", path, line_no, bar);
  if (!keep) return false;
  std::string_view gloss = f.rest;
  const size_t b = gloss.find_first_not_of(' ');
  gloss = b == gloss.npos ? std::string_view() : gloss.substr(b);
  while (!gloss.empty() && (gloss.back() == ' ' || gloss.back() == '\r')) gloss.remove_suffix(1);
  doc.append(": ");
  doc.append(gloss);
  return true;
}

std::vector<std::string> load_wordnet(Split want) {
  const char* env = std::getenv("SEQLAB_WORDNET_DIR");
  const std::string dir = env && *env ? env : "/usr/share/wordnet";
  static const char* kHint =
      " (WordNet 3.0 comes with Debian's wordnet-base package; $SEQLAB_WORDNET_DIR overrides "
      "/usr/share/wordnet)";
  struct PosFile {
    const char* name;
    char pos;
  };
  static const PosFile kFiles[] = {
      {"data.noun", 'n'}, {"data.verb", 'v'}, {"data.adj", 'a'}, {"data.adv", 'r'}};
  std::vector<std::string> docs;
  std::string key, doc;
  int64_t synsets = 0;
  for (const auto& pf : kFiles) {
    const std::string path = dir + "/" + pf.name;
    const std::string data = read_all(path, "WordNet", kHint);
    std::string_view all(data);
    int64_t line_no = 0;
    while (!all.empty()) {
      const size_t e = std::min(all.find('\n'), all.size());
      std::string_view ln = all.substr(0, e);
      all.remove_prefix(std::min(e + 1, all.size()));
      ++line_no;
      if (ln.rfind("  ", 0) == 0) continue;  // license header
      if (ln.empty() || ln == "\r") continue;
      ++synsets;
      if (parse_synset(ln, pf.pos, path, line_no, want, key, doc)) docs.push_back(doc);
    }
  }
  SEQLAB_CHECK(synsets > 0, "WordNet files in {} hold no synsets{}", dir, kHint);
  return docs;
}

// ---- plain-text files ----

std::vector<std::string> load_files(const std::string& spec, Split want) {
  std::vector<std::string> docs;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string path = spec.substr(start, comma - start);
    start = comma + 1;
    SEQLAB_CHECK(!path.empty(), "corpus '{}': empty path in the comma-separated list", spec);
    const std::string data = read_all(path, "corpus", "");
    SEQLAB_CHECK(data.find('\0') == std::string::npos,
                 "corpus file {} is not text: it contains NUL bytes", path);
    // Text in a legacy 8-bit encoding (a few accented letters) passes; binary data does not.
    const size_t bad = invalid_utf8_bytes(data);
    SEQLAB_CHECK(bad * 4 <= data.size(),
                 "corpus file {} is not text: {} of its {} bytes are not valid UTF-8", path, bad,
                 data.size());
    std::string_view all(data);
    int64_t kept = 0;
    while (!all.empty()) {
      const size_t e = std::min(all.find('\n'), all.size());
      std::string_view ln = all.substr(0, e);
      all.remove_prefix(std::min(e + 1, all.size()));
      if (!ln.empty() && ln.back() == '\r') ln.remove_suffix(1);
      if (ln.find_first_not_of(" \t\f\v") == ln.npos) continue;
      ++kept;
      if (split_of(ln) == want) docs.emplace_back(ln);
    }
    SEQLAB_CHECK(kept > 0, "corpus file {} is empty (no non-empty lines)", path);
  }
  return docs;
}

}  // namespace

Split split_of_key(std::string_view key) {
  return split_of(key);
}

std::vector<std::string> load_corpus(const std::string& spec, Split split) {
  SEQLAB_CHECK(!spec.empty(),
               "empty --corpus (expected wordnet, files or directories, comma-separated)");
  if (spec == "wordnet") return load_wordnet(split);
  // A comma-separated list of sources, read in order: "wordnet", a text file, or a directory
  // (its *.txt files in name order).
  std::vector<std::string> docs, files;
  auto flush_files = [&] {
    if (files.empty()) return;
    std::string joined;
    for (const auto& f : files) joined += (joined.empty() ? "" : ",") + f;
    auto more = load_files(joined, split);
    docs.insert(docs.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
    files.clear();
  };
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    SEQLAB_CHECK(!item.empty(), "corpus '{}': empty path in the comma-separated list", spec);
    std::error_code ec;
    if (item == "wordnet") {
      flush_files();
      auto more = load_wordnet(split);
      docs.insert(docs.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
    } else if (std::filesystem::is_directory(item, ec)) {
      std::vector<std::string> txt;
      for (const auto& e : std::filesystem::directory_iterator(item))
        if (e.is_regular_file() && e.path().extension() == ".txt") txt.push_back(e.path().string());
      SEQLAB_CHECK(!txt.empty(), "corpus directory {} holds no *.txt files", item);
      std::sort(txt.begin(), txt.end());
      files.insert(files.end(), txt.begin(), txt.end());
    } else {
      files.push_back(item);
    }
  }
  flush_files();
  return docs;
}

}  // namespace seqlab
