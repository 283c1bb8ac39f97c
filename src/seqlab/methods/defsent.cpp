#include "seqlab/methods/defsent.h"

#include "seqlab/core/error.h"
#include "seqlab/core/progress.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/optim.h"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <numeric>

namespace seqlab {

namespace {

using LossFn = std::function<torch::Tensor(const torch::Tensor& pooled, const torch::Tensor& y)>;

struct Tokenized {
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t> lengths, targets;
};

Tokenized tokenize(const Encoder& e, const std::vector<DefExample>& ex) {
  Tokenized t;
  for (const auto& x : ex) {
    t.ids.push_back(e.tokens(x.definition));
    t.lengths.push_back(static_cast<int64_t>(t.ids.back().size()));
    t.targets.push_back(x.target);
  }
  return t;
}

torch::Tensor batch_targets(const Tokenized& t, const std::vector<int64_t>& rows) {
  std::vector<int64_t> y;
  for (auto r : rows) y.push_back(t.targets[r]);
  return torch::tensor(y, torch::kLong);
}

TrainReport train_loop(Encoder& e, const std::vector<DefExample>& ex, const DefTrainOptions& o,
                       const std::string& frozen_prefix, const LossFn& loss_fn) {
  SEQLAB_CHECK(!ex.empty(), "definition training: no examples");
  SEQLAB_CHECK(o.steps >= 1 && o.batch >= 1, "definition training: steps and batch must be >= 1");
  const auto tk = tokenize(e, ex);
  auto model = e.model();
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (auto& p : model->named_parameters()) {
    const bool frozen = !frozen_prefix.empty() && p.key().rfind(frozen_prefix, 0) == 0;
    p.value().set_requires_grad(!frozen);
    if (!frozen) params.emplace_back(p.key(), p.value());
  }
  auto r = train_length_batched(
      params, tk.lengths, {o.steps, o.batch, o.warmup, o.lr, o.seed, 2000000, o.progress},
      [&](const std::vector<int64_t>& rows, int64_t) {
        return loss_fn(e.forward(batch_tokens(tk.ids, rows)), batch_targets(tk, rows));
      });
  for (auto& p : model->parameters()) p.set_requires_grad(true);
  model->eval();
  return r;
}

double eval_loss(const Encoder& e, const std::vector<DefExample>& ex, int64_t batch,
                 const LossFn& loss_fn) {
  SEQLAB_CHECK(!ex.empty(), "definition loss: no examples");
  const auto tk = tokenize(e, ex);
  torch::NoGradGuard ng;
  const bool was = e.model()->is_training();
  e.model()->eval();
  double sum = 0;
  int64_t n = 0;
  for (const auto& rows : length_batches(tk.lengths, batch, 0)) {
    sum += loss_fn(e.forward(batch_tokens(tk.ids, rows)), batch_targets(tk, rows)).item<double>() *
           static_cast<double>(rows.size());
    n += static_cast<int64_t>(rows.size());
  }
  if (was) e.model()->train();
  return sum / static_cast<double>(n);
}

LossFn head_loss(const Encoder& e) {
  return [m = e.model().ptr()](const torch::Tensor& pooled, const torch::Tensor& y) {
    return torch::nn::functional::cross_entropy(m->head(pooled), y);  // [B,V] vs [B]
  };
}

LossFn cosine_loss(const torch::Tensor& E, double temperature) {
  SEQLAB_CHECK(temperature > 0, "DefSent+ temperature must be > 0, got {}", temperature);
  auto En = torch::nn::functional::normalize(
      E.detach().to(torch::kFloat), torch::nn::functional::NormalizeFuncOptions().dim(1));  // [K,D]
  return [En, temperature](const torch::Tensor& pooled, const torch::Tensor& y) {
    auto p = torch::nn::functional::normalize(pooled,
                                              torch::nn::functional::NormalizeFuncOptions().dim(1));
    return torch::nn::functional::cross_entropy(p.matmul(En.t()) / temperature, y);  // [B,K]
  };
}

void check_entries(const Encoder& e, const torch::Tensor& E) {
  SEQLAB_CHECK(E.dim() == 2 && E.size(1) == e.model()->config().mixer.d_model && E.size(0) >= 1,
               "entry embeddings must be [K, d_model = {}], got {}",
               e.model()->config().mixer.d_model, c10::str(E.sizes()));
}

}  // namespace

std::vector<DefExample> one_token_examples(const Dictionary& d, const std::vector<int32_t>& entries,
                                           const Tokenizer& tok) {
  std::vector<DefExample> out;
  for (auto i : entries) {
    const auto& en = d.entries().at(i);
    const auto ids = tok.encode(" " + en.word);
    if (ids.size() != 1) continue;
    for (auto s : en.synsets) out.push_back({d.definition(s), ids[0]});
  }
  return out;
}

std::vector<DefExample> entry_examples(const Dictionary& d, const std::vector<int32_t>& entries) {
  std::vector<DefExample> out;
  for (size_t k = 0; k < entries.size(); ++k)
    for (auto s : d.entries().at(entries[k]).synsets)
      out.push_back({d.definition(s), static_cast<int64_t>(k)});
  return out;
}

TrainReport train_defsent(Encoder& e, const std::vector<DefExample>& ex, const DefTrainOptions& o) {
  const int64_t V = e.model()->config().n_classes;
  for (const auto& x : ex)
    SEQLAB_CHECK(x.target >= 0 && x.target < V, "DefSent target token {} is outside [0, {})",
                 x.target, V);
  return train_loop(e, ex, o, "head.", head_loss(e));
}

torch::Tensor entry_embeddings(const Encoder& e, const Dictionary& d,
                               const std::vector<int32_t>& entries, int64_t batch) {
  SEQLAB_CHECK(!entries.empty(), "entry embeddings: no entries");
  // Each distinct definition once: synonyms share their synset's definition.
  std::vector<int32_t> synsets;
  std::unordered_map<int32_t, int64_t> row;
  for (auto i : entries)
    for (auto s : d.entries().at(i).synsets)
      if (row.emplace(s, static_cast<int64_t>(synsets.size())).second) synsets.push_back(s);
  std::vector<std::string> defs;
  for (auto s : synsets) defs.push_back(d.definition(s));
  auto emb = e.embed(defs, batch);  // [S,D]
  auto E = torch::zeros({static_cast<int64_t>(entries.size()), emb.size(1)});
  for (size_t k = 0; k < entries.size(); ++k) {
    std::vector<int64_t> rows;
    for (auto s : d.entries()[entries[k]].synsets) rows.push_back(row[s]);
    E[static_cast<int64_t>(k)] = emb.index_select(0, torch::tensor(rows)).mean(0);  // [D]
  }
  return E;
}

torch::Tensor whiten(const torch::Tensor& E) {
  SEQLAB_CHECK(E.dim() == 2 && E.size(0) >= 2, "whitening needs >= 2 rows, got {}",
               c10::str(E.sizes()));
  auto X = E.to(torch::kDouble);
  auto centered = X - X.mean(0, /*keepdim=*/true);             // [K,D]
  auto cov = centered.t().matmul(centered) / (X.size(0) - 1);  // [D,D]
  auto [s, U] = torch::linalg::eigh(cov, "L");                 // [D], [D,D]
  const double floor = std::max(s.max().item<double>(), 1e-30) * 1e-6;
  auto W = U / s.clamp_min(floor).sqrt().unsqueeze(0);  // [D,D]: column j scaled by 1/sqrt(s_j)
  return centered.matmul(W).to(torch::kFloat);          // [K,D]
}

TrainReport train_to_entries(Encoder& e, const std::vector<DefExample>& ex, const torch::Tensor& E,
                             const DefTrainOptions& o) {
  check_entries(e, E);
  for (const auto& x : ex)
    SEQLAB_CHECK(x.target >= 0 && x.target < E.size(0), "DefSent+ target {} is outside [0, {})",
                 x.target, E.size(0));
  return train_loop(e, ex, o, "", cosine_loss(E, o.temperature));
}

double defsent_loss(const Encoder& e, const std::vector<DefExample>& ex, int64_t batch) {
  return eval_loss(e, ex, batch, head_loss(e));
}

double entries_loss(const Encoder& e, const std::vector<DefExample>& ex, const torch::Tensor& E,
                    double temperature, int64_t batch) {
  check_entries(e, E);
  return eval_loss(e, ex, batch, cosine_loss(E, temperature));
}

}  // namespace seqlab
