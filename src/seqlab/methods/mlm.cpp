#include "seqlab/methods/mlm.h"

#include "seqlab/core/error.h"
#include "seqlab/core/progress.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/optim.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

namespace seqlab {

torch::Tensor batch_tokens(const std::vector<std::vector<int64_t>>& ids,
                           const std::vector<int64_t>& rows) {
  size_t T = ids[rows[0]].size();
  for (auto r : rows) T = std::min(T, ids[r].size());
  auto t = torch::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(T)}, torch::kLong);
  auto* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy(ids[rows[i]].begin(), ids[rows[i]].begin() + static_cast<std::ptrdiff_t>(T),
              p + i * T);
  return t;
}

namespace {

// BERT's masking of tokens [B,T] in place; returns the chosen positions [B,T] bool and the
// original tokens. Position 0 ([CLS]) is never chosen; at least one position is.
std::pair<torch::Tensor, torch::Tensor> mask_tokens(torch::Tensor& tok, const Encoder& e,
                                                    double prob, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int64_t> word(0, e.tokenizer().vocab_size() - 1);
  auto orig = tok.clone();
  auto chosen = torch::zeros(tok.sizes(), torch::kBool);
  auto* t = tok.data_ptr<int64_t>();
  auto* c = chosen.data_ptr<bool>();
  const int64_t B = tok.size(0), T = tok.size(1);
  int64_t n = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 1; i < T; ++i) {
      if (u(rng) >= prob) continue;
      c[b * T + i] = true;
      ++n;
      const double r = u(rng);
      if (r < 0.8)
        t[b * T + i] = e.mask_id();
      else if (r < 0.9)
        t[b * T + i] = word(rng);
    }
  if (n == 0 && T > 1) {
    c[1] = true;
    t[1] = e.mask_id();
  }
  return {chosen, orig};
}

torch::Tensor mlm_batch_loss(const Encoder& e, torch::Tensor tok, double prob, uint64_t seed) {
  auto [chosen, orig] = mask_tokens(tok, e, prob, seed);
  auto h = e.model()->hidden(tok);                   // [B,T,D]
  auto logits = e.model()->head(h.index({chosen}));  // [n,V]
  return torch::nn::functional::cross_entropy(logits, orig.index({chosen}));
}

}  // namespace

std::vector<std::vector<int64_t>> length_batches(const std::vector<int64_t>& lengths, int64_t batch,
                                                 uint64_t seed) {
  SEQLAB_CHECK(batch >= 1, "batch must be >= 1, got {}", batch);
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<int64_t>> out;
  for (size_t s = 0; s < order.size(); s += static_cast<size_t>(batch))
    out.emplace_back(order.begin() + s,
                     order.begin() + std::min(order.size(), s + static_cast<size_t>(batch)));
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

TrainReport train_length_batched(
    const std::vector<std::pair<std::string, torch::Tensor>>& params,
    const std::vector<int64_t>& lengths, const LoopOptions& o,
    const std::function<torch::Tensor(const std::vector<int64_t>& rows, int64_t step)>& step_loss) {
  const auto t0 = std::chrono::steady_clock::now();
  AdamW opt(params, {});
  std::vector<torch::Tensor> plist;
  for (auto& p : params) plist.push_back(p.second);
  std::unique_ptr<Progress> bar;
  if (!o.progress.empty()) bar = std::make_unique<Progress>(o.progress, o.steps);
  std::vector<std::vector<int64_t>> epoch;
  size_t next = 0;
  int64_t n_epoch = 0;
  std::vector<double> losses;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (next == epoch.size()) {
      epoch = length_batches(lengths, o.batch, mix_seed(o.seed, o.stream + n_epoch++));
      next = 0;
    }
    const auto& rows = epoch[next++];
    opt.zero_grad();
    auto loss = step_loss(rows, step);
    loss.backward();
    clip_grad_norm(plist, 1.0);
    opt.step(lr_at(step, o.steps, o.warmup, o.lr, 0.1));
    losses.push_back(loss.item<double>());
    if (bar) bar->update(step + 1, fmt::format("loss {:.3f}", losses.back()));
  }
  if (bar) bar->finish();
  TrainReport r;
  r.steps = o.steps;
  const size_t k = std::max<size_t>(1, losses.size() / 10);
  r.first_loss = std::accumulate(losses.begin(), losses.begin() + k, 0.0) / k;
  r.last_loss = std::accumulate(losses.end() - k, losses.end(), 0.0) / k;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

TrainReport pretrain_mlm(Encoder& e, const std::vector<std::string>& texts, const MlmOptions& o) {
  SEQLAB_CHECK(!texts.empty(), "masked-LM pretraining: no texts");
  SEQLAB_CHECK(o.steps >= 1 && o.batch >= 1, "masked-LM pretraining: steps and batch must be >= 1");
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t> lengths;
  for (const auto& s : texts) {
    ids.push_back(e.tokens(s));
    lengths.push_back(static_cast<int64_t>(ids.back().size()));
  }
  auto model = e.model();
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (auto& p : model->named_parameters())
    if (p.value().requires_grad()) params.emplace_back(p.key(), p.value());
  auto r = train_length_batched(
      params, lengths, {o.steps, o.batch, o.warmup, o.lr, o.seed, 1000000, o.progress},
      [&](const std::vector<int64_t>& rows, int64_t step) {
        return mlm_batch_loss(e, batch_tokens(ids, rows), o.mask_prob, mix_seed(o.seed, step));
      });
  model->eval();
  return r;
}

double mlm_loss(const Encoder& e, const std::vector<std::string>& texts, int64_t batch,
                uint64_t seed, double mask_prob) {
  SEQLAB_CHECK(!texts.empty(), "masked-LM loss: no texts");
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t> lengths;
  for (const auto& s : texts) {
    ids.push_back(e.tokens(s));
    lengths.push_back(static_cast<int64_t>(ids.back().size()));
  }
  torch::NoGradGuard ng;
  const bool was = e.model()->is_training();
  e.model()->eval();
  double sum = 0;
  int64_t n = 0;
  for (const auto& rows : length_batches(lengths, batch, seed)) {
    sum += mlm_batch_loss(e, batch_tokens(ids, rows), mask_prob, mix_seed(seed, n)).item<double>();
    ++n;
  }
  if (was) e.model()->train();
  return sum / n;
}

}  // namespace seqlab
