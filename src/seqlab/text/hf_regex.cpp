#include "seqlab/text/hf_regex.h"

#include "seqlab/core/error.h"
#include "seqlab/text/hf_unicode.h"

#include <fmt/format.h>

#include <array>
#include <limits>

namespace seqlab::hf {
namespace {

constexpr int kMaxRepeat = 1000;         // {n,m} bounds
constexpr size_t kMaxProgram = 1 << 16;  // instructions, after expanding counted repeats
constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

// ---- Character classes.

enum PropFlag : uint8_t { kSpace = 1, kWord = 2, kHex = 4, kAnyUnit = 8 };

struct ClassItem {
  enum Kind : uint8_t { kRange, kProp, kNested } kind;
  bool neg = false;         // kProp: complement (\P, \S, \D, \W, \H)
  uint8_t flags = 0;        // kProp
  uint32_t cats = 0;        // kProp: category mask
  char32_t lo = 0, hi = 0;  // kRange, inclusive
  int nested = -1;          // kNested: class index
};

struct CharClass {
  std::vector<ClassItem> items;
  bool negated = false;
  bool fold = false;              // ASCII case-insensitive
  std::array<bool, 128> ascii{};  // class_match() of every ASCII unit, once filled
  bool ascii_filled = false;
};

bool is_hex(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_ascii_letter(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
char32_t swap_case(char32_t c) {
  return c ^ 0x20;  // ASCII letters only
}

bool prop_matches(const ClassItem& it, char32_t c) {
  bool m;
  if (it.flags & kAnyUnit) {
    m = true;
  } else if (c >= kInvalidByte) {
    m = false;  // an invalid byte has no property
  } else {
    m = (it.cats && in_categories(c, it.cats)) || ((it.flags & kSpace) && is_white_space(c)) ||
        ((it.flags & kWord) && is_word_char(c)) || ((it.flags & kHex) && is_hex(c));
  }
  return m != it.neg;
}

bool class_match(const std::vector<CharClass>& all, const CharClass& k, char32_t u);

bool class_raw(const std::vector<CharClass>& all, const CharClass& k, char32_t u) {
  for (const auto& it : k.items) {
    switch (it.kind) {
      case ClassItem::kRange:
        if (u >= it.lo && u <= it.hi) return true;
        break;
      case ClassItem::kProp:
        if (prop_matches(it, u)) return true;
        break;
      case ClassItem::kNested:
        if (class_match(all, all[it.nested], u)) return true;
        break;
    }
  }
  return false;
}

// Whether the class matches unit u; nested classes are looked up in `all`.
bool class_match(const std::vector<CharClass>& all, const CharClass& k, char32_t u) {
  if (u < 128 && k.ascii_filled) return k.ascii[u];
  bool m = class_raw(all, k, u);
  if (!m && k.fold && u < 128 && is_ascii_letter(u)) m = class_raw(all, k, swap_case(u));
  return m != k.negated;
}

// ---- Syntax tree.

struct Node {
  enum Kind : uint8_t { kEmpty, kChar, kAny, kClass, kConcat, kAlt, kRepeat, kLook, kAssert };
  Kind kind = kEmpty;
  char32_t c = 0;
  bool fold = false;
  int cls = -1;
  int min = 0, max = 0;  // kRepeat; max -1 = unbounded
  bool greedy = true;
  bool negate = false;   // kLook
  char assert_kind = 0;  // kAssert: ^ $ A z Z b B
  std::vector<std::unique_ptr<Node>> kids;
};
using NodeP = std::unique_ptr<Node>;

NodeP make(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::kChar:
    case Node::kAny:
    case Node::kClass:
      return false;
    case Node::kConcat:
      for (const auto& k : n.kids)
        if (!nullable(*k)) return false;
      return true;
    case Node::kAlt:
      for (const auto& k : n.kids)
        if (nullable(*k)) return true;
      return false;
    case Node::kRepeat:
      return n.min == 0 || nullable(*n.kids[0]);
    default:
      return true;
  }
}

// A one-line rendering of a pattern for messages: control characters escaped.
std::string shown_pattern(std::string_view p) {
  std::string s;
  for (char ch : p) {
    const auto b = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      s += "\\n";
    } else if (ch == '\r') {
      s += "\\r";
    } else if (ch == '\t') {
      s += "\\t";
    } else if (b < 0x20 || b == 0x7F) {
      s += fmt::format("\\x{:02x}", b);
    } else {
      s.push_back(ch);
    }
  }
  return s;
}

// Category masks (and flags) of the property names \p{...} accepts, in their loose form
// (lower case, without spaces, '_' and '-').
bool property(const std::string& loose, uint32_t* cats, uint8_t* flags) {
  using C = Category;
  struct P {
    const char* a;
    const char* b;
    uint32_t mask;
  };
  static const P table[] = {
      {"l", "letter", kLetterMask},
      {"lu", "uppercaseletter", cat_bit(C::Lu)},
      {"ll", "lowercaseletter", cat_bit(C::Ll)},
      {"lt", "titlecaseletter", cat_bit(C::Lt)},
      {"lm", "modifierletter", cat_bit(C::Lm)},
      {"lo", "otherletter", cat_bit(C::Lo)},
      {"lc", "casedletter", cat_bit(C::Lu) | cat_bit(C::Ll) | cat_bit(C::Lt)},
      {"l&", "casedletter", cat_bit(C::Lu) | cat_bit(C::Ll) | cat_bit(C::Lt)},
      {"m", "mark", kMarkMask},
      {"m", "combiningmark", kMarkMask},
      {"mn", "nonspacingmark", cat_bit(C::Mn)},
      {"mc", "spacingmark", cat_bit(C::Mc)},
      {"me", "enclosingmark", cat_bit(C::Me)},
      {"n", "number", kNumberMask},
      {"nd", "decimalnumber", cat_bit(C::Nd)},
      {"nl", "letternumber", cat_bit(C::Nl)},
      {"no", "othernumber", cat_bit(C::No)},
      {"p", "punctuation", kPunctuationMask},
      {"pc", "connectorpunctuation", cat_bit(C::Pc)},
      {"pd", "dashpunctuation", cat_bit(C::Pd)},
      {"ps", "openpunctuation", cat_bit(C::Ps)},
      {"pe", "closepunctuation", cat_bit(C::Pe)},
      {"pi", "initialpunctuation", cat_bit(C::Pi)},
      {"pf", "finalpunctuation", cat_bit(C::Pf)},
      {"po", "otherpunctuation", cat_bit(C::Po)},
      {"s", "symbol", kSymbolMask},
      {"sm", "mathsymbol", cat_bit(C::Sm)},
      {"sc", "currencysymbol", cat_bit(C::Sc)},
      {"sk", "modifiersymbol", cat_bit(C::Sk)},
      {"so", "othersymbol", cat_bit(C::So)},
      {"z", "separator", kSeparatorMask},
      {"zs", "spaceseparator", cat_bit(C::Zs)},
      {"zl", "lineseparator", cat_bit(C::Zl)},
      {"zp", "paragraphseparator", cat_bit(C::Zp)},
      {"c", "other", kOtherMask},
      {"cc", "control", cat_bit(C::Cc)},
      {"cf", "format", cat_bit(C::Cf)},
      {"cs", "surrogate", cat_bit(C::Cs)},
      {"co", "privateuse", cat_bit(C::Co)},
      {"cn", "unassigned", cat_bit(C::Cn)},
  };
  std::string name = loose;
  for (const char* prefix : {"gc=", "generalcategory="})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  for (const auto& p : table) {
    if (name == p.a || name == p.b) {
      *cats = p.mask;
      return true;
    }
  }
  if (name == "any") {
    *flags = kAnyUnit;
    return true;
  }
  if (name == "whitespace" || name == "space" || name == "wspace") {
    *flags = kSpace;
    return true;
  }
  return false;
}

// ---- Parser: pattern (as units) -> syntax tree + classes.

class Parser {
 public:
  Parser(std::u32string p, std::vector<CharClass>* classes, const std::string& pattern,
         const std::string& where)
      : p_(std::move(p)), classes_(classes), pattern_(pattern), where_(where) {}

  NodeP parse() {
    bool fold = false;
    NodeP n = parse_alt(&fold);
    if (i_ < p_.size()) error("unmatched ')'");
    return n;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail("{}: regex '{}': {} at offset {}", where_, shown_pattern(pattern_), what, i_);
  }
  bool at_end() const { return i_ >= p_.size(); }
  char32_t peek(size_t k = 0) const { return i_ + k < p_.size() ? p_[i_ + k] : 0; }
  bool eat(char32_t c) {
    if (peek() != c || at_end()) return false;
    ++i_;
    return true;
  }

  NodeP parse_alt(bool* fold) {
    auto alt = make(Node::kAlt);
    alt->kids.push_back(parse_concat(fold));
    while (eat('|')) alt->kids.push_back(parse_concat(fold));
    if (alt->kids.size() == 1) return std::move(alt->kids[0]);
    return alt;
  }

  NodeP parse_concat(bool* fold) {
    auto cat = make(Node::kConcat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      NodeP atom = parse_atom(fold);
      if (!atom) continue;  // a flag group (?i)
      cat->kids.push_back(parse_quantifiers(std::move(atom)));
    }
    if (cat->kids.size() == 1) return std::move(cat->kids[0]);
    return cat;
  }

  // {n}, {n,}, {n,m}, {,m} at i_: true and the bounds when it is one, else false (a literal '{').
  bool brace_quantifier(int* min, int* max, size_t* len) const {
    size_t k = i_ + 1;
    auto number = [&](int* v) {
      const size_t start = k;
      long x = 0;
      while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') {
        x = std::min<long>(x * 10 + (p_[k] - '0'), 1 << 30);
        ++k;
      }
      *v = static_cast<int>(x);
      return k > start;
    };
    int a = 0, b = 0;
    const bool has_a = number(&a);
    if (k < p_.size() && p_[k] == '}') {
      if (!has_a) return false;
      *min = *max = a;
    } else if (k < p_.size() && p_[k] == ',') {
      ++k;
      const bool has_b = number(&b);
      if (!(k < p_.size() && p_[k] == '}') || (!has_a && !has_b)) return false;
      *min = has_a ? a : 0;
      *max = has_b ? b : -1;
    } else {
      return false;
    }
    *len = k + 1 - i_;
    return true;
  }

  bool quantifier_here(int* min, int* max, size_t* len) const {
    if (at_end()) return false;
    switch (peek()) {
      case '*':
        *min = 0, *max = -1, *len = 1;
        return true;
      case '+':
        *min = 1, *max = -1, *len = 1;
        return true;
      case '?':
        *min = 0, *max = 1, *len = 1;
        return true;
      case '{':
        return brace_quantifier(min, max, len);
      default:
        return false;
    }
  }

  NodeP parse_quantifiers(NodeP atom) {
    int min = 0, max = 0;
    size_t len = 0;
    if (!quantifier_here(&min, &max, &len)) return atom;
    const char32_t q = peek();
    if (atom->kind == Node::kAssert || atom->kind == Node::kLook) error("a quantified anchor");
    i_ += len;
    bool greedy = true;
    if (q != '{' && eat('+')) error("a possessive quantifier");
    if (eat('?')) greedy = false;
    if (min > kMaxRepeat || max > kMaxRepeat)
      error(fmt::format("a repeat count above {}", kMaxRepeat));
    if (max >= 0 && max < min) error("a repeat {n,m} with m < n");
    if (quantifier_here(&min, &max, &len)) error("stacked quantifiers");
    if (max < 0 && nullable(*atom)) error("a repeated sub-pattern that can match the empty string");
    auto r = make(Node::kRepeat);
    r->min = min;
    r->max = max;
    r->greedy = greedy;
    r->kids.push_back(std::move(atom));
    return r;
  }

  NodeP literal(char32_t c, bool fold) {
    auto n = make(Node::kChar);
    n->c = c;
    n->fold = fold && is_ascii_letter(c);
    return n;
  }

  NodeP class_node(CharClass cls) {
    fill_ascii(&cls);
    classes_->push_back(std::move(cls));
    auto n = make(Node::kClass);
    n->cls = static_cast<int>(classes_->size()) - 1;
    return n;
  }

  void fill_ascii(CharClass* cls) const;

  NodeP parse_atom(bool* fold) {
    const char32_t c = p_[i_++];
    switch (c) {
      case '(':
        return parse_group(fold);
      case '[': {
        CharClass cls = parse_class(*fold);
        return class_node(std::move(cls));
      }
      case '.':
        return make(Node::kAny);
      case '^':
      case '$': {
        auto n = make(Node::kAssert);
        n->assert_kind = static_cast<char>(c);
        return n;
      }
      case '\\':
        return parse_escape(*fold);
      case '*':
      case '+':
      case '?':
        --i_;
        error("a quantifier with nothing to repeat");
      case '{': {
        int a, b;
        size_t len;
        --i_;
        if (brace_quantifier(&a, &b, &len)) error("a quantifier with nothing to repeat");
        ++i_;
        return literal(c, *fold);
      }
      default:
        return literal(c, *fold);
    }
  }

  // After '(' .
  NodeP parse_group(bool* fold) {
    const Nest nest(this);
    bool inner_fold = *fold;
    NodeP look;
    if (eat('?')) {
      if (eat(':')) {
      } else if (eat('=') || eat('!')) {
        look = make(Node::kLook);
        look->negate = p_[i_ - 1] == '!';
      } else if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) {
        error("lookbehind (?<= or (?<!");
      } else if (peek() == '>') {
        error("an atomic group (?>");
      } else if (peek() == '<' || (peek() == 'P' && peek(1) == '<')) {
        while (!at_end() && peek() != '>') ++i_;  // a named group: the name does not matter
        if (!eat('>')) error("an unterminated group name");
      } else {
        // Flags: (?i) (?-i) (?i:...) (?-i:...).
        bool on = true, any = false;
        while (!at_end() && peek() != ':' && peek() != ')') {
          const char32_t f = p_[i_];
          if (f == '-' && on) {
            on = false;
          } else if (f == 'i') {
            inner_fold = on;
            any = true;
          } else {
            error(fmt::format("the group flag '{}' (only i is supported)",
                              from_units(std::u32string(1, f))));
          }
          ++i_;
        }
        if (!any) error("an empty flag group");
        if (eat(')')) {
          *fold = inner_fold;  // (?i): to the end of the enclosing group
          return nullptr;
        }
        if (!eat(':')) error("an unterminated group");
      }
    }
    NodeP body = parse_alt(&inner_fold);
    if (!eat(')')) error("a missing ')'");
    if (look) {
      look->kids.push_back(std::move(body));
      return look;
    }
    return body;
  }

  char32_t parse_hex(size_t min_digits, size_t max_digits) {
    char32_t v = 0;
    size_t n = 0;
    while (n < max_digits && !at_end() && is_hex(peek())) {
      const char32_t d = p_[i_++];
      v = v * 16 + (d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
      ++n;
    }
    if (n < min_digits) error("a malformed hexadecimal escape");
    return v;
  }

  // \x.. \x{..} \u.... after the letter; checks the range.
  char32_t parse_code_escape(char32_t letter) {
    char32_t v;
    if (letter == 'x' && eat('{')) {
      v = parse_hex(1, 8);
      if (!eat('}')) error("an unterminated \\x{...}");
    } else if (letter == 'x') {
      v = parse_hex(1, 2);
    } else {
      v = parse_hex(4, 4);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) error("an escape that is no code point");
    return v;
  }

  // Shorthand classes and properties, as a class item; false if `e` is none of them.
  bool shorthand(char32_t e, ClassItem* it) {
    it->kind = ClassItem::kProp;
    switch (e) {
      case 's':
      case 'S':
        it->flags = kSpace;
        break;
      case 'd':
      case 'D':
        it->cats = cat_bit(Category::Nd);
        break;
      case 'w':
      case 'W':
        it->flags = kWord;
        break;
      case 'h':
      case 'H':
        it->flags = kHex;
        break;
      case 'p':
      case 'P':
        parse_property(it);
        if (e == 'P') it->neg = !it->neg;
        return true;
      default:
        return false;
    }
    it->neg = e == 'S' || e == 'D' || e == 'W' || e == 'H';
    return true;
  }

  // After \p or \P: {Name} or {^Name}.
  void parse_property(ClassItem* it) {
    if (!eat('{')) error("\\p without {...}");
    if (eat('^')) it->neg = true;
    std::string loose, raw;
    while (!at_end() && peek() != '}') {
      const char32_t c = p_[i_++];
      raw += from_units(std::u32string(1, c));
      if (c == ' ' || c == '_' || c == '-') continue;
      loose += from_units(std::u32string(1, c >= 'A' && c <= 'Z' ? c | 0x20 : c));
    }
    if (!eat('}')) error("an unterminated \\p{...}");
    if (!property(loose, &it->cats, &it->flags))
      error(
          fmt::format("the Unicode property '{}' (general categories, Any and White_Space are "
                      "supported)",
                      raw));
  }

  // Escapes that stand for one character (the same inside and outside classes); false if none.
  bool char_escape(char32_t e, char32_t* out) {
    switch (e) {
      case 't':
        *out = '\t';
        return true;
      case 'n':
        *out = '\n';
        return true;
      case 'r':
        *out = '\r';
        return true;
      case 'f':
        *out = '\f';
        return true;
      case 'v':
        *out = '\v';
        return true;
      case 'a':
        *out = 0x07;
        return true;
      case 'e':
        *out = 0x1B;
        return true;
      case 'x':
      case 'u':
        *out = parse_code_escape(e);
        return true;
      default:
        if (e < 128 && (is_ascii_letter(e) || (e >= '0' && e <= '9'))) return false;
        *out = e;  // escaped punctuation (or any non-ASCII character) stands for itself
        return true;
    }
  }

  NodeP parse_escape(bool fold) {
    if (at_end()) error("a trailing backslash");
    const size_t at = i_;
    const char32_t e = p_[i_++];
    char32_t c;
    if (char_escape(e, &c)) return literal(c, fold);
    ClassItem it;
    if (shorthand(e, &it)) {
      CharClass cls;
      cls.items.push_back(it);
      return class_node(std::move(cls));
    }
    if (e == 'b' || e == 'B' || e == 'A' || e == 'z' || e == 'Z') {
      auto n = make(Node::kAssert);
      n->assert_kind = static_cast<char>(e);
      return n;
    }
    i_ = at - 1;
    error(fmt::format("the escape \\{}", static_cast<char>(e)));
  }

  // After '['.
  CharClass parse_class(bool fold) {
    const Nest nest(this);
    CharClass cls;
    cls.fold = fold;
    cls.negated = eat('^');
    bool first = true;
    while (true) {
      if (at_end()) error("an unterminated character class");
      if (peek() == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (peek() == '&' && peek(1) == '&') error("class intersection &&");
      if (peek() == '[') {
        if (peek(1) == ':') error("a POSIX bracket [:...:]");
        ++i_;
        CharClass inner = parse_class(fold);
        fill_ascii(&inner);
        classes_->push_back(std::move(inner));
        ClassItem it;
        it.kind = ClassItem::kNested;
        it.nested = static_cast<int>(classes_->size()) - 1;
        cls.items.push_back(it);
        continue;
      }
      char32_t lo;
      if (!class_char(&cls, &lo)) continue;  // a shorthand, already added
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        char32_t hi;
        const size_t at = i_;
        if (!class_char(&cls, &hi)) {
          i_ = at;
          error("a range whose end is a class");
        }
        if (hi < lo) error("a range out of order");
        cls.items.push_back({ClassItem::kRange, false, 0, 0, lo, hi, -1});
      } else {
        cls.items.push_back({ClassItem::kRange, false, 0, 0, lo, lo, -1});
      }
    }
    return cls;
  }

  // One class member at i_: a character (true, *c) or a shorthand added to cls (false).
  bool class_char(CharClass* cls, char32_t* c) {
    const char32_t ch = p_[i_++];
    if (ch != '\\') {
      *c = ch;
      return true;
    }
    if (at_end()) error("a trailing backslash");
    const size_t at = i_;
    const char32_t e = p_[i_++];
    if (char_escape(e, c)) return true;
    ClassItem it;
    if (shorthand(e, &it)) {
      cls->items.push_back(it);
      return false;
    }
    i_ = at - 1;
    error(fmt::format("the escape \\{} in a class", static_cast<char>(e)));
  }

  // Groups and classes nest at most kMaxNesting deep (the parser, the tree and the matcher's
  // lookaheads recurse once per level).
  static constexpr int kMaxNesting = 100;
  struct Nest {
    explicit Nest(Parser* p) : p(p) {
      if (++p->depth_ > kMaxNesting)
        p->error(fmt::format("groups or classes nested deeper than {}", kMaxNesting));
    }
    ~Nest() { --p->depth_; }
    Parser* p;
  };

  std::u32string p_;
  size_t i_ = 0;
  int depth_ = 0;
  std::vector<CharClass>* classes_;
  const std::string& pattern_;
  const std::string& where_;
};

}  // namespace

// ---- Program.

struct Regex::Program {
  enum Op : uint8_t { kChar, kAny, kClass, kSplit, kJmp, kMatch, kLook, kAssert, kRun };
  struct Inst {
    Op op;
    Op atom = kChar;    // kRun: what repeats (kChar, kAny or kClass)
    bool flag = false;  // kChar/kRun: fold; kSplit: unused; kLook: negate; kRun: greedy
    bool greedy = true;
    char32_t c = 0;
    int32_t cls = -1;
    int32_t x = 0, y = 0;  // kSplit: preferred, other; kJmp/kLook: targets
    int32_t min = 0;
    size_t max = 0;  // kRun
    char assert_kind = 0;
  };
  std::vector<Inst> insts;
  std::vector<CharClass> classes;
  std::string where, pattern;

  bool atom(Op op, bool fold, char32_t c, int cls, char32_t u) const {
    switch (op) {
      case kChar:
        return u == c || (fold && u < 128 && is_ascii_letter(u) && swap_case(u) == c);
      case kAny:
        return u != '\n';
      default:
        return class_match(classes, classes[cls], u);
    }
  }

  void check_size(const std::string& pattern_shown) const {
    SEQLAB_CHECK(insts.size() <= kMaxProgram,
                 "{}: regex '{}': the pattern is too large once its repeats are expanded", where,
                 pattern_shown);
  }

  void emit(const Node& n);
  bool assert_ok(char kind, std::u32string_view t, size_t pos) const;
  bool exec(int32_t pc, std::u32string_view t, size_t pos, size_t* end, size_t* steps,
            size_t budget) const;
};

void Parser::fill_ascii(CharClass* cls) const {
  // Nested classes were filled before their parent, which is not in classes_ yet.
  for (char32_t u = 0; u < 128; ++u) cls->ascii[u] = class_match(*classes_, *cls, u);
  cls->ascii_filled = true;
}

void Regex::Program::emit(const Node& n) {
  check_size(pattern);
  const auto here = [&] { return static_cast<int32_t>(insts.size()); };
  switch (n.kind) {
    case Node::kEmpty:
      return;
    case Node::kChar:
      insts.push_back({kChar, kChar, n.fold, true, n.c});
      return;
    case Node::kAny:
      insts.push_back({kAny});
      return;
    case Node::kClass: {
      Inst in{kClass};
      in.cls = n.cls;
      insts.push_back(in);
      return;
    }
    case Node::kConcat:
      for (const auto& k : n.kids) emit(*k);
      return;
    case Node::kAlt: {
      std::vector<int32_t> jumps;
      for (size_t i = 0; i < n.kids.size(); ++i) {
        int32_t split = -1;
        if (i + 1 < n.kids.size()) {
          split = here();
          insts.push_back({kSplit});
          insts[split].x = here();
        }
        emit(*n.kids[i]);
        if (i + 1 < n.kids.size()) {
          jumps.push_back(here());
          insts.push_back({kJmp});
          insts[split].y = here();
        }
      }
      for (int32_t j : jumps) insts[j].x = here();
      return;
    }
    case Node::kLook: {
      const int32_t look = here();
      Inst in{kLook};
      in.flag = n.negate;
      in.x = look + 1;
      insts.push_back(in);
      emit(*n.kids[0]);
      insts.push_back({kMatch});
      insts[look].y = here();
      return;
    }
    case Node::kAssert: {
      Inst in{kAssert};
      in.assert_kind = n.assert_kind;
      insts.push_back(in);
      return;
    }
    case Node::kRepeat:
      break;
  }
  const Node& kid = *n.kids[0];
  if (kid.kind == Node::kChar || kid.kind == Node::kAny || kid.kind == Node::kClass) {
    Inst in{kRun};
    in.atom = kid.kind == Node::kChar ? kChar : kid.kind == Node::kAny ? kAny : kClass;
    in.flag = kid.fold;
    in.c = kid.c;
    in.cls = kid.cls;
    in.greedy = n.greedy;
    in.min = n.min;
    in.max = n.max < 0 ? kUnbounded : static_cast<size_t>(n.max);
    insts.push_back(in);
    return;
  }
  for (int i = 0; i < n.min; ++i) emit(kid);
  const auto split_to = [&](int32_t body, int32_t out) {
    Inst in{kSplit};
    in.x = n.greedy ? body : out;
    in.y = n.greedy ? out : body;
    return in;
  };
  if (n.max < 0) {
    const int32_t loop = here();
    insts.push_back({kSplit});
    emit(kid);
    Inst j{kJmp};
    j.x = loop;
    insts.push_back(j);
    insts[loop] = split_to(loop + 1, here());
    return;
  }
  std::vector<int32_t> splits;
  for (int i = n.min; i < n.max; ++i) {
    splits.push_back(here());
    insts.push_back({kSplit});
    emit(kid);
  }
  for (int32_t s : splits) insts[s] = split_to(s + 1, here());
}

bool Regex::Program::assert_ok(char kind, std::u32string_view t, size_t pos) const {
  const size_t n = t.size();
  switch (kind) {
    case '^':
      return pos == 0 || t[pos - 1] == '\n';
    case '$':
      return pos == n || t[pos] == '\n';
    case 'A':
      return pos == 0;
    case 'z':
      return pos == n;
    case 'Z':
      return pos == n || (pos + 1 == n && t[pos] == '\n');
    default: {  // \b \B
      const bool before = pos > 0 && is_word_char(t[pos - 1]);
      const bool after = pos < n && is_word_char(t[pos]);
      return (before != after) == (kind == 'b');
    }
  }
}

bool Regex::Program::exec(int32_t pc0, std::u32string_view t, size_t pos0, size_t* end,
                          size_t* steps, size_t budget) const {
  // Backtracking with an explicit stack. A frame resumes a thread: kind 0 at (pc, pos); kind 1
  // gives a greedy run back one unit (pos, down to aux); kind 2 lets a lazy run take one more
  // unit (pos, up to aux).
  struct Frame {
    int32_t pc;
    uint8_t kind;
    size_t pos, aux;
  };
  std::vector<Frame> stack{{pc0, 0, pos0, 0}};
  const size_t n = t.size();
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    int32_t pc = f.pc;
    size_t pos = f.pos;
    if (f.kind != 0) {
      const Inst& run = insts[pc];
      if (f.kind == 1) {
        if (pos > f.aux) stack.push_back({pc, 1, pos - 1, f.aux});
      } else {
        ++pos;  // the unit at f.pos matched when the frame was pushed
        if (pos < f.aux && pos < n && atom(run.atom, run.flag, run.c, run.cls, t[pos]))
          stack.push_back({pc, 2, pos, f.aux});
      }
      ++pc;
    }
    bool alive = true;
    while (alive) {
      if (++*steps > budget)
        fail(
            "{}: regex '{}': over {} backtracking steps on a text of {} characters (a pattern "
            "that backtracks exponentially?)",
            where, shown_pattern(pattern), budget, n);
      const Inst& in = insts[pc];
      switch (in.op) {
        case kChar:
        case kAny:
        case kClass:
          alive = pos < n && atom(in.op, in.flag, in.c, in.cls, t[pos]);
          ++pos;
          ++pc;
          break;
        case kSplit:
          stack.push_back({in.y, 0, pos, 0});
          pc = in.x;
          break;
        case kJmp:
          pc = in.x;
          break;
        case kMatch:
          *end = pos;
          return true;
        case kLook: {
          size_t e;
          const bool ok = exec(in.x, t, pos, &e, steps, budget);
          alive = ok != in.flag;
          pc = in.y;
          break;
        }
        case kAssert:
          alive = assert_ok(in.assert_kind, t, pos);
          ++pc;
          break;
        case kRun: {
          size_t k = 0;
          const size_t want = in.greedy ? in.max : static_cast<size_t>(in.min);
          while (k < want && pos + k < n && atom(in.atom, in.flag, in.c, in.cls, t[pos + k])) ++k;
          if (k < static_cast<size_t>(in.min)) {
            alive = false;
            break;
          }
          if (in.greedy) {
            if (k > static_cast<size_t>(in.min))
              stack.push_back({pc, 1, pos + k - 1, pos + in.min});
          } else {
            const size_t limit = in.max == kUnbounded ? kUnbounded : pos + in.max;
            if (pos + k < limit && pos + k < n && atom(in.atom, in.flag, in.c, in.cls, t[pos + k]))
              stack.push_back({pc, 2, pos + k, limit});
          }
          pos += k;
          ++pc;
          break;
        }
      }
    }
  }
  return false;
}

Regex::Regex(std::string_view pattern, std::string where)
    : pattern_(pattern), where_(std::move(where)), prog_(std::make_unique<Program>()) {
  std::vector<uint32_t> offsets;
  std::u32string units = to_units(pattern, &offsets);
  for (size_t i = 0; i < units.size(); ++i) {
    SEQLAB_CHECK(units[i] < kInvalidByte, "{}: regex '{}': invalid UTF-8 at byte {}", where_,
                 shown_pattern(pattern_), offsets[i]);
  }
  prog_->where = where_;
  prog_->pattern = pattern_;
  Parser parser(std::move(units), &prog_->classes, pattern_, where_);
  const NodeP root = parser.parse();
  prog_->emit(*root);
  prog_->insts.push_back({Program::kMatch});
  prog_->check_size(pattern_);
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

bool Regex::search(std::u32string_view text, size_t from, size_t* begin, size_t* end) const {
  const size_t budget = 1000000 + 1000 * (text.size() - std::min(from, text.size()));
  size_t steps = 0;
  for (size_t s = from; s <= text.size(); ++s) {
    if (prog_->exec(0, text, s, end, &steps, budget)) {
      *begin = s;
      return true;
    }
  }
  return false;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::u32string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  size_t pos = 0, b, e;
  while (pos <= text.size() && search(text, pos, &b, &e)) {
    if (e == b) {
      pos = b + 1;
      continue;
    }
    out.emplace_back(b, e);
    pos = e;
  }
  return out;
}

}  // namespace seqlab::hf
