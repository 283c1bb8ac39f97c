#include "seqlab/methods/classify_eval.h"

#include "seqlab/core/error.h"
#include "seqlab/methods/calibration.h"
#include "seqlab/train/evaluate.h"

#include <chrono>

namespace seqlab {

namespace {

// Restores training mode on scope exit; evaluation runs in eval mode without gradients.
struct EvalMode {
  explicit EvalMode(SeqModelImpl& m) : model(m), was_training(m.is_training()) { m.eval(); }
  ~EvalMode() {
    if (was_training) model.train();
  }
  SeqModelImpl& model;
  bool was_training;
};

}  // namespace

ClassifySet classify_set(const Task& task, Split split, int64_t length, int64_t n, int64_t batch,
                         uint64_t seed) {
  SEQLAB_CHECK(task.head() == "classify", "task {} is not a classification task", task.name());
  SEQLAB_CHECK(n > 0 && batch > 0, "need n > 0 and batch > 0");
  ClassifySet s;
  const uint64_t base = eval_seed(seed, length);
  std::vector<torch::Tensor> t, soft, diff;
  for (int64_t done = 0, i = 0; done < n; done += batch, ++i) {
    auto b = task.sample_split(std::min(batch, n - done), length, mix_seed(base, i), split);
    t.push_back(b.target);
    if (b.soft.defined()) soft.push_back(b.soft.to(torch::kFloat64));
    if (b.difficulty.defined()) diff.push_back(b.difficulty.to(torch::kFloat64));
    s.batches.push_back(std::move(b));
  }
  s.n = n;
  s.target = torch::cat(t);
  if (soft.size() == t.size()) s.soft = torch::cat(soft);
  if (diff.size() == t.size()) s.difficulty = torch::cat(diff);
  return s;
}

std::vector<torch::Tensor> exit_logits_on(SeqModelImpl& model, const ClassifySet& set) {
  torch::NoGradGuard ng;
  EvalMode em(model);
  std::vector<std::vector<torch::Tensor>> per;  // [exit][batch]
  for (const auto& b : set.batches) {
    auto ls = model.exit_logits(b.input, b.valid);
    per.resize(ls.size());
    for (size_t j = 0; j < ls.size(); ++j) per[j].push_back(ls[j]);
  }
  std::vector<torch::Tensor> out;
  for (auto& p : per) out.push_back(torch::cat(p));  // [N,C]
  return out;
}

namespace {

std::vector<ExitCalibration> measure(SeqModelImpl& model, const ClassifySet& set, bool fit) {
  SEQLAB_CHECK(model.exits, "this model has no early exits (train it with --exits)");
  const auto logits = exit_logits_on(model, set);
  const auto layers = model.config().exit_layers();
  std::vector<ExitCalibration> out;
  torch::NoGradGuard ng;
  for (size_t j = 0; j < logits.size(); ++j) {
    ExitCalibration c;
    c.layer = layers[j];
    auto p1 = torch::softmax(logits[j].to(torch::kFloat64), -1);
    c.accuracy = p1.argmax(-1).eq(set.target).to(torch::kFloat64).mean().item<double>();
    c.nll_before = mean_nll(p1, set.target);
    c.ece_before = expected_calibration_error(p1, set.target);
    c.temperature = fit ? fit_temperature(logits[j], set.target)
                        : model.exit_temperature[static_cast<int64_t>(j)].item<double>();
    if (fit) model.exit_temperature[static_cast<int64_t>(j)].fill_(c.temperature);
    auto pt = torch::softmax(logits[j].to(torch::kFloat64) / c.temperature, -1);
    c.nll_after = mean_nll(pt, set.target);
    c.ece_after = expected_calibration_error(pt, set.target);
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<ExitCalibration> calibrate_exits(SeqModelImpl& model, const ClassifySet& set) {
  return measure(model, set, /*fit=*/true);
}

std::vector<ExitCalibration> exit_calibration(SeqModelImpl& model, const ClassifySet& set) {
  return measure(model, set, /*fit=*/false);
}

std::vector<ExitPoint> exit_curve(SeqModelImpl& model, const ClassifySet& set,
                                  const std::vector<double>& thresholds) {
  SEQLAB_CHECK(model.exits, "this model has no early exits (train it with --exits)");
  torch::NoGradGuard ng;
  EvalMode em(model);
  const size_t n_exits = model.config().exit_layers().size();
  // One example at a time, its padding trimmed: what a served request costs.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> items;  // tokens [1,L], valid [1,L]
  for (const auto& b : set.batches)
    for (int64_t i = 0; i < b.input.size(0); ++i) {
      auto tok = b.input.narrow(0, i, 1);
      torch::Tensor v;
      if (b.valid.defined()) {
        v = b.valid.narrow(0, i, 1);
        const int64_t len = std::max<int64_t>(1, v.sum().item<int64_t>());
        tok = tok.narrow(1, 0, len);
        v = v.narrow(1, 0, len);
      }
      items.emplace_back(tok, v);
    }
  std::vector<ExitPoint> out;
  for (double th : thresholds) {
    ExitPoint p;
    p.threshold = th;
    p.exit_share.assign(n_exits, 0.0);
    auto pred = torch::empty({set.n}, torch::kLong);
    auto used = torch::empty({set.n}, torch::kFloat64);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < items.size(); ++i) {
      auto r = model.classify_early(items[i].first, items[i].second, th);
      pred[static_cast<int64_t>(i)] = r.logits.argmax(-1).item<int64_t>();
      used[static_cast<int64_t>(i)] = r.layers.item<int64_t>();
      p.exit_share[static_cast<size_t>(r.exit.item<int64_t>())] += 1;
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    p.accuracy = pred.eq(set.target).to(torch::kFloat64).mean().item<double>();
    p.mean_layers = used.mean().item<double>();
    p.examples_per_s = secs > 0 ? static_cast<double>(set.n) / secs : 0;
    if (set.difficulty.defined()) p.difficulty_rho = spearman(used, set.difficulty);
    for (auto& s : p.exit_share) s /= static_cast<double>(set.n);
    out.push_back(p);
  }
  return out;
}

torch::Tensor predict_probs(SeqModelImpl& model, const ClassifySet& set) {
  torch::NoGradGuard ng;
  EvalMode em(model);
  std::vector<torch::Tensor> ps;
  for (const auto& b : set.batches)
    ps.push_back(torch::softmax(model.forward(b.input, b.valid).to(torch::kFloat64), -1));
  return torch::cat(ps);  // [N,C]
}

torch::Tensor swag_probs(SeqModelImpl& model, const Swag& swag, const ClassifySet& set,
                         int64_t samples, double scale, uint64_t seed) {
  SEQLAB_CHECK(samples > 0, "--swag-samples must be positive, got {}", samples);
  torch::NoGradGuard ng;
  std::map<std::string, torch::Tensor> params, saved;
  for (auto& p : model.named_parameters()) params[p.key()] = p.value();
  for (const auto& [name, m] : swag.mean()) {
    auto it = params.find(name);
    SEQLAB_CHECK(it != params.end() && it->second.sizes() == m.sizes(),
                 "the SWAG moments do not belong to this model (parameter '{}')", name);
    saved[name] = it->second.clone();
  }
  auto gen = make_generator(seed);
  torch::Tensor sum;
  for (int64_t s = 0; s < samples; ++s) {
    for (auto& [name, w] : swag.sample(scale, gen)) params[name].copy_(w);
    auto p = predict_probs(model, set);
    sum = sum.defined() ? sum + p : p;
  }
  for (auto& [name, w] : saved) params[name].copy_(w);
  return sum / static_cast<double>(samples);
}

UncertaintyScore score_probs(const torch::Tensor& probs, const ClassifySet& set) {
  UncertaintyScore s;
  s.n = set.n;
  s.accuracy = probs.argmax(-1).eq(set.target).to(torch::kFloat64).mean().item<double>();
  s.nll = mean_nll(probs, set.target);
  s.ece = expected_calibration_error(probs, set.target);
  if (set.soft.defined()) {
    s.annotators = true;
    auto he = entropy(probs), ha = entropy(set.soft);
    s.entropy_pearson = pearson(he, ha);
    s.entropy_spearman = spearman(he, ha);
    s.kl = mean_kl(set.soft, probs);
  }
  return s;
}

}  // namespace seqlab
