// The Jinja subset's lexer (serve/jinja.h): template text and tags, each tag's tokens, and the
// whitespace rules Hugging Face's chat environment sets (Jinja2 with trim_blocks and
// lstrip_blocks, keep_trailing_newline off):
//   - newlines are normalized to \n and one trailing newline of the template is dropped;
//   - {%- / {{- / {#- strip all whitespace before the tag, -%} / -}} / -#} all after it;
//   - trim_blocks: the first newline after a block or comment tag is dropped ({% +%} keeps it);
//   - lstrip_blocks: spaces and tabs from the start of a line up to a block or comment tag are
//     dropped ({%+ keeps them).
#include "seqlab/serve/jinja_ast.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace seqlab::serve::jinja {

namespace {

enum class PieceKind { text, var, block, comment };

struct Piece {
  PieceKind kind = PieceKind::text;
  std::string text;  // text pieces
  std::vector<Token> tokens;
  char lmod = 0, rmod = 0;  // '-', '+' or 0 just inside the delimiters
  int line = 1;
};

[[noreturn]] void fail_at(int line, const std::string& msg) {
  throw Error(fmt::format("line {}: {}", line, msg));
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void append_utf8(std::string& out, uint32_t cp, int line) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    fail_at(line, fmt::format("escape \\U{:08X} is not a Unicode scalar value", cp));
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Lexes one tag's inside, from `pos` (just past "{{" / "{%" and its modifier) to its end
// delimiter. Returns the position past the delimiter.
class TagLexer {
 public:
  TagLexer(const std::string& src, size_t pos, int* line) : s_(src), p_(pos), line_(line) {}

  size_t run(PieceKind kind, Piece& piece) {
    const int opened = *line_;
    const char* end = kind == PieceKind::var ? "}}" : "%}";
    while (true) {
      while (p_ < s_.size() && is_space(s_[p_])) {
        if (s_[p_] == '\n') ++*line_;
        ++p_;
      }
      if (p_ >= s_.size())
        fail_at(opened, fmt::format("unterminated '{}' tag", kind == PieceKind::var ? "{{" : "{%"));
      for (const char mod : {'-', '+', '\0'}) {
        if (mod == '+' && kind == PieceKind::var) continue;
        const size_t at = p_ + (mod ? 1 : 0);
        if ((!mod || s_[p_] == mod) && s_.compare(at, 2, end) == 0) {
          piece.rmod = mod;
          return at + 2;
        }
      }
      piece.tokens.push_back(next());
    }
  }

 private:
  Token next() {
    Token t;
    t.line = *line_;
    const char c = s_[p_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = p_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
        ++e;
      t.kind = Tok::name;
      t.s = s_.substr(p_, e - p_);
      p_ = e;
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return number(t);
    if (c == '\'' || c == '"') return string(t);
    static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                 "/",  "%",  "~",  "(",  ")",  "[",  "]", "{", "}",
                                 ",",  ".",  ":",  "|",  "=",  "<",  ">"};
    for (const char* op : kOps) {
      if (s_.compare(p_, std::strlen(op), op) == 0) {
        t.kind = Tok::op;
        t.s = op;
        p_ += std::strlen(op);
        return t;
      }
    }
    fail_at(*line_, fmt::format("unexpected character '{}' in a tag", c));
  }

  Token number(Token t) {
    size_t e = p_;
    while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      is_float = true;
      ++e;
      while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
    }
    const std::string text = s_.substr(p_, e - p_);
    p_ = e;
    if (is_float) {
      t.kind = Tok::number;
      t.d = std::strtod(text.c_str(), nullptr);  // no exception: a huge one is inf
      return t;
    }
    if (text.size() > 18) fail_at(t.line, fmt::format("integer literal {} is too large", text));
    t.kind = Tok::integer;
    t.i = std::stoll(text);
    return t;
  }

  uint32_t hex(size_t n) {
    if (p_ + n > s_.size()) fail_at(*line_, "truncated escape in a string literal");
    uint32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char h = s_[p_ + k];
      if (!std::isxdigit(static_cast<unsigned char>(h)))
        fail_at(*line_, "bad hexadecimal escape in a string literal");
      v = v * 16 +
          static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                    ? h - '0'
                                    : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
    }
    p_ += n;
    return v;
  }

  // Python's unicode-escape rules, as Jinja2 decodes string literals.
  void escape(std::string& out) {
    const char e = s_[p_++];
    switch (e) {
      case 'n':
        out += '\n';
        return;
      case 't':
        out += '\t';
        return;
      case 'r':
        out += '\r';
        return;
      case 'a':
        out += '\a';
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'v':
        out += '\v';
        return;
      case '\\':
        out += '\\';
        return;
      case '\'':
        out += '\'';
        return;
      case '"':
        out += '"';
        return;
      case '\n':
        ++*line_;
        return;  // a line continuation
      case 'x':
        append_utf8(out, hex(2), *line_);
        return;
      case 'u':
        append_utf8(out, hex(4), *line_);
        return;
      case 'U':
        append_utf8(out, hex(8), *line_);
        return;
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t v = static_cast<uint32_t>(e - '0');
      for (int k = 0; k < 2 && p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '7'; ++k)
        v = v * 8 + static_cast<uint32_t>(s_[p_++] - '0');
      append_utf8(out, v, *line_);
      return;
    }
    if (e == 'N') fail_at(*line_, "the \\N{...} escape is not supported");
    out += '\\';  // an unknown escape stays as written
    out += e;
  }

  Token string(Token t) {
    const char q = s_[p_++];
    t.kind = Tok::string;
    while (true) {
      if (p_ >= s_.size()) fail_at(t.line, "unterminated string literal");
      const char c = s_[p_];
      if (c == q) {
        ++p_;
        return t;
      }
      if (c == '\\' && p_ + 1 < s_.size()) {
        ++p_;
        escape(t.s);
        continue;
      }
      if (c == '\n') ++*line_;
      t.s += c;
      ++p_;
    }
  }

  const std::string& s_;
  size_t p_;
  int* line_;
};

int count_lines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to; ++i) n += s[i] == '\n';
  return n;
}

std::vector<Piece> split(const std::string& s) {
  std::vector<Piece> out;
  int line = 1;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t open = pos;
    while ((open = s.find('{', open)) != std::string::npos && open + 1 < s.size() &&
           s[open + 1] != '{' && s[open + 1] != '%' && s[open + 1] != '#')
      ++open;
    if (open == std::string::npos || open + 1 >= s.size()) open = s.size();
    if (open > pos) {
      out.push_back({PieceKind::text, s.substr(pos, open - pos), {}, 0, 0, line});
      line += count_lines(s, pos, open);
    }
    if (open >= s.size()) break;
    const char c = s[open + 1];
    Piece tag;
    tag.kind = c == '{' ? PieceKind::var : c == '%' ? PieceKind::block : PieceKind::comment;
    tag.line = line;
    size_t p = open + 2;
    if (p < s.size() && (s[p] == '-' || (s[p] == '+' && tag.kind != PieceKind::var)))
      tag.lmod = s[p++];
    if (tag.kind == PieceKind::comment) {
      const size_t close = s.find("#}", p);
      if (close == std::string::npos) fail_at(line, "unterminated comment");
      if (close > p && s[close - 1] == '-') tag.rmod = '-';
      line += count_lines(s, p, close);
      pos = close + 2;
    } else {
      pos = TagLexer(s, p, &line).run(tag.kind, tag);
    }
    out.push_back(std::move(tag));
  }
  return out;
}

// Applies the whitespace rules to text piece i, from its neighbouring tags.
void trim_text(std::vector<Piece>& ps, size_t i) {
  std::string& t = ps[i].text;
  bool line_starting = i == 0;
  if (i > 0) {
    const Piece& prev = ps[i - 1];
    size_t cut = 0;
    if (prev.rmod == '-') {
      while (cut < t.size() && is_space(t[cut])) ++cut;
    } else if (prev.kind != PieceKind::var && prev.rmod != '+' && !t.empty() && t[0] == '\n') {
      cut = 1;
    }
    line_starting = cut > 0 && t[cut - 1] == '\n';
    t.erase(0, cut);
  }
  if (i + 1 < ps.size()) {
    const Piece& next = ps[i + 1];
    if (next.lmod == '-') {
      while (!t.empty() && is_space(t.back())) t.pop_back();
    } else if (next.kind != PieceKind::var && next.lmod != '+') {
      const size_t nl = t.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting) && t.find_first_not_of(" \t", l_pos) == std::string::npos)
        t.resize(l_pos);
    }
  }
}

}  // namespace

std::vector<Token> lex(const std::string& source, const ParseLimits& lim) {
  if (source.size() > lim.max_source_bytes)
    throw Error(fmt::format("the template has {} bytes, more than {}", source.size(),
                            lim.max_source_bytes));
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  auto pieces = split(s);
  // Text pieces are trimmed from their neighbours' modifiers: a text between two tags may lose
  // its start to the previous one and its end to the next one.
  for (size_t i = 0; i < pieces.size(); ++i)
    if (pieces[i].kind == PieceKind::text) trim_text(pieces, i);
  std::vector<Token> out;
  for (auto& p : pieces) {
    if (p.kind == PieceKind::comment) continue;
    if (p.kind == PieceKind::text) {
      if (!p.text.empty()) out.push_back({Tok::text, std::move(p.text), 0, 0, p.line});
      continue;
    }
    const bool var = p.kind == PieceKind::var;
    out.push_back({var ? Tok::var_begin : Tok::block_begin, "", 0, 0, p.line});
    for (auto& t : p.tokens) out.push_back(std::move(t));
    out.push_back({var ? Tok::var_end : Tok::block_end, "", 0, 0, p.line});
  }
  out.push_back({Tok::eof, "", 0, 0, 0});
  return out;
}

}  // namespace seqlab::serve::jinja
