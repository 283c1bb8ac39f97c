#include "seqlab/tasks/dyck_bounded.h"

#include "seqlab/tasks/seq2seq.h"

#include <algorithm>
#include <utility>

namespace seqlab {

DyckBoundedTask::DyckBoundedTask(const TaskConfig& cfg) : n_types_(cfg.n_types), depth_(cfg.depth) {
  SEQLAB_CHECK(n_types_ >= 1, "dyck_bounded: --n-types must be at least 1, got {}", n_types_);
  SEQLAB_CHECK(depth_ >= 1, "dyck_bounded: --depth must be at least 1, got {}", depth_);
}

namespace {

// Balanced and matched, with nesting depth at most m (m < 0: any depth).
bool in_dyck(const std::vector<int64_t>& s, int64_t k, int64_t m) {
  std::vector<int64_t> stack;
  for (int64_t x : s) {
    if (x < k) {
      stack.push_back(x);
      if (m >= 0 && static_cast<int64_t>(stack.size()) > m) return false;
    } else {
      if (stack.empty() || stack.back() != x - k) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

}  // namespace

bool DyckBoundedTask::is_member(const std::vector<int64_t>& s) const {
  return in_dyck(s, n_types_, depth_);
}

bool DyckBoundedTask::is_matched(const std::vector<int64_t>& s) const {
  return in_dyck(s, n_types_, -1);
}

bool DyckBoundedTask::is_shape_member(const std::vector<int64_t>& s) const {
  std::vector<int64_t> shape(s.size());
  for (size_t i = 0; i < s.size(); ++i) shape[i] = s[i] < n_types_ ? 0 : 1;
  return in_dyck(shape, 1, depth_);
}

namespace {

// A random member of Dyck-(k, m) of even length L: open with probability 1/2 whenever both moves
// keep the string completable within the depth bound.
std::vector<int64_t> draw_member(std::mt19937_64& rng, int64_t L, int64_t k, int64_t m) {
  std::vector<int64_t> s, stack;
  for (int64_t t = 0; t < L; ++t) {
    const int64_t d = static_cast<int64_t>(stack.size()), left = L - t;
    const bool can_open = d < m && d + 1 <= left - 1;
    const bool open = can_open && (d == 0 || draw_below(rng, 2) == 0);
    if (open) {
      stack.push_back(draw_below(rng, k));
      s.push_back(stack.back());
    } else {
      s.push_back(k + stack.back());
      stack.pop_back();
    }
  }
  return s;
}

// Adjacent pairs (i, i+1) that a transposition can act on: "()" for swap, ")(" at depth m for
// deep (the depth before the ')' is m). Same-type ")(" pairs come first for deep, so that the
// result violates the depth bound and nothing else.
std::vector<int64_t> transposable(const std::vector<int64_t>& s, int64_t k, int64_t m, bool deep) {
  std::vector<int64_t> same, other;
  int64_t d = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const bool open_i = s[i] < k, open_j = s[i + 1] < k;
    if (!deep && open_i && !open_j) other.push_back(static_cast<int64_t>(i));
    if (deep && !open_i && open_j && d == m)
      (s[i] - k == s[i + 1] ? same : other).push_back(static_cast<int64_t>(i));
    d += open_i ? 1 : -1;
  }
  return same.empty() ? other : same;
}

std::vector<int64_t> flip(std::mt19937_64& rng, std::vector<int64_t> s, int64_t k) {
  const int64_t p = draw_below(rng, static_cast<int64_t>(s.size()));
  s[p] = s[p] < k ? s[p] + k : s[p] - k;
  return s;
}

}  // namespace

// One edit of a member, of the kinds and odds in the header; may (for swap) yield a member.
std::vector<int64_t> DyckBoundedTask::one_edit(std::mt19937_64& rng, std::vector<int64_t> s) const {
  const int64_t k = n_types_, L = static_cast<int64_t>(s.size());
  const double u = draw_unit(rng);
  const auto deep = transposable(s, k, depth_, true), swap = transposable(s, k, depth_, false);
  if (u < 0.3 && !deep.empty()) {
    const int64_t p = deep[draw_below(rng, static_cast<int64_t>(deep.size()))];
    std::swap(s[p], s[p + 1]);
  } else if (u < 0.6 && !swap.empty()) {
    const int64_t p = swap[draw_below(rng, static_cast<int64_t>(swap.size()))];
    std::swap(s[p], s[p + 1]);
  } else if (u < 0.85 && k >= 2) {
    const int64_t p = draw_below(rng, L);
    const int64_t side = s[p] < k ? 0 : k, type = s[p] - side;
    s[p] = side + (type + 1 + draw_below(rng, k - 1)) % k;
  } else {
    s = flip(rng, std::move(s), k);
  }
  return s;
}

Batch DyckBoundedTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "dyck_bounded: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= min_length(), "dyck_bounded: length {} is below the minimum {}", length,
               min_length());
  const int64_t k = n_types_, L = length - length % 2, lead = length - L;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = i < (batch + 1) / 2 ? 1 : 0;
  for (int64_t i = batch - 1; i > 0; --i) std::swap(labels[i], labels[draw_below(rng, i + 1)]);

  std::vector<int64_t> input(batch * length, pad());
  for (int64_t i = 0; i < batch; ++i) {
    auto s = draw_member(rng, L, k, depth_);
    if (labels[i] == 0) {
      const auto base = s;
      for (int attempt = 0; attempt < 8 && is_member(s); ++attempt) s = one_edit(rng, base);
      if (is_member(s)) s = flip(rng, base, k);  // a flip always breaks the counts
    }
    std::copy(s.begin(), s.end(), input.begin() + i * length + lead);
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);  // [B,T]
  b.target = torch::tensor(labels, torch::kLong);  // [B]
  b.mask = b.input.ne(pad());                      // [B,T] the brackets
  return b;
}

Score DyckBoundedTask::score(const torch::Tensor& logits, const Batch& b) const {
  torch::NoGradGuard ng;
  Score s = Task::score(logits, b);
  const auto in = b.input.contiguous();              // [B,T]
  const auto pred = logits.argmax(-1).contiguous();  // [B]
  const auto tg = b.target.contiguous();             // [B]
  const int64_t B = in.size(0), T = in.size(1);
  const int64_t *ip = in.data_ptr<int64_t>(), *pp = pred.data_ptr<int64_t>(),
                *yp = tg.data_ptr<int64_t>();
  // Per kind: sequences of the kind, and those classified right.
  const char* names[] = {"pos", "neg_depth", "neg_type", "neg_shape"};
  double count[4] = {0, 0, 0, 0}, right[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < B; ++i) {
    std::vector<int64_t> str;
    for (int64_t j = 0; j < T; ++j)
      if (ip[i * T + j] != pad()) str.push_back(ip[i * T + j]);
    const int kind = yp[i] == 1 ? 0 : is_matched(str) ? 1 : is_shape_member(str) ? 2 : 3;
    count[kind] += 1;
    right[kind] += pp[i] == yp[i];
  }
  for (int c = 0; c < 4; ++c) {
    s.extra[std::string(names[c]) + "_share"] = count[c] / static_cast<double>(B);
    s.extra[std::string(names[c]) + "_right"] = right[c] / static_cast<double>(B);
  }
  return s;
}

}  // namespace seqlab
