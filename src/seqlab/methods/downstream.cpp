#include "seqlab/methods/downstream.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/optim.h"

#include <fmt/ranges.h>

namespace seqlab {

namespace {

constexpr int64_t kProbeBatch = 256;
constexpr int64_t kChunk = 256;  // sentences per feature pass

int64_t n_classes(const std::string& task) {
  SEQLAB_CHECK(task == "pos" || task == "label", "unknown downstream task '{}' (pos, label)", task);
  return task == "pos" ? kNumGrammarPos : Grammar::kNumLabels;
}

// The head's inputs and targets from features [N,16,D]: pos -> every word's state [Nw,D] and tag;
// label -> the mean of the word states [N,D] and the label.
std::pair<torch::Tensor, torch::Tensor> head_inputs(const std::string& task,
                                                    const torch::Tensor& feats,
                                                    const DownstreamData& d,
                                                    const torch::Tensor& rows) {
  auto tags = d.tags.index({rows});                                       // [N,16]
  auto words = tags >= 0;                                                 // [N,16]
  if (task == "pos") return {feats.index({words}), tags.index({words})};  // [Nw,D], [Nw]
  auto w = words.to(feats.dtype()).unsqueeze(-1);                         // [N,16,1]
  return {(feats * w).sum(1) / w.sum(1), d.labels.index({rows})};         // [N,D], [N]
}

double accuracy(const torch::Tensor& logits, const torch::Tensor& y) {
  return (logits.argmax(-1) == y).to(torch::kFloat64).mean().item<double>();
}

std::vector<std::pair<std::string, torch::Tensor>> named_params(torch::nn::Module& m,
                                                                const std::string& prefix) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(prefix + p.key(), p.value());
  return out;
}

}  // namespace

DownstreamData downstream_data(const Grammar& g, int lang, int64_t n, uint64_t stream) {
  const int64_t T = kSentenceLen;
  std::vector<int64_t> tok(static_cast<size_t>(n * T), Grammar::kPad), tags(tok.size(), -1);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto m = g.sample(stream, static_cast<uint64_t>(i));
    const auto r = g.render(m, lang);
    tok[i * T] = Grammar::kBos;
    for (size_t k = 0; k < r.tokens.size(); ++k) {
      tok[i * T + 1 + k] = r.tokens[k];
      tags[i * T + 1 + k] = r.tags[k];
    }
    tok[i * T + 1 + static_cast<int64_t>(r.tokens.size())] = Grammar::kEos;
    labels[i] = Grammar::label(m);
  }
  return {torch::tensor(tok, torch::kLong).view({n, T}),
          torch::tensor(tags, torch::kLong).view({n, T}), torch::tensor(labels, torch::kLong)};
}

double probe_accuracy(PretrainModel& m, const std::string& task, const DownstreamData& train,
                      const DownstreamData& test, const ObjectivesConfig& cfg, uint64_t seed) {
  const int64_t C = n_classes(task);
  auto feats = [&](const DownstreamData& d) {
    torch::NoGradGuard ng;
    m.module().eval();
    std::vector<torch::Tensor> parts;
    for (int64_t i = 0; i < d.tokens.size(0); i += kChunk)
      parts.push_back(m.features(d.tokens.narrow(0, i, std::min(kChunk, d.tokens.size(0) - i))));
    auto f = torch::cat(parts, 0);  // [N,16,D]
    return head_inputs(task, f, d, torch::arange(d.tokens.size(0)));
  };
  auto [x, y] = feats(train);
  auto [xt, yt] = feats(test);
  torch::manual_seed(seed);
  torch::nn::Linear head(m.d_model(), C);
  AdamW opt(named_params(*head, ""), AdamWOptions{0.9, 0.999, 1e-8, 0.0});
  auto gen = make_generator(mix_seed(seed, 1));
  for (int64_t s = 0; s < cfg.probe_steps; ++s) {
    auto idx = torch::randint(0, x.size(0), {std::min(kProbeBatch, x.size(0))}, gen);  // [b]
    opt.zero_grad();
    torch::nn::functional::cross_entropy(head(x.index({idx})), y.index({idx})).backward();
    opt.step(lr_at(s, cfg.probe_steps, 0, cfg.probe_lr, 0.1));
  }
  torch::NoGradGuard ng;
  return accuracy(head(xt), yt);
}

std::map<std::string, torch::Tensor> module_weights(const torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> w;
  for (const auto& p : m.named_parameters()) w[p.key()] = p.value().detach().clone();
  for (const auto& b : m.named_buffers()) w[b.key()] = b.value().detach().clone();
  return w;
}

void load_module_weights(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& w,
                         const std::string& source) {
  torch::NoGradGuard ng;
  size_t seen = 0;
  auto put = [&](const std::string& k, torch::Tensor& t) {
    auto it = w.find(k);
    SEQLAB_CHECK(it != w.end(), "{}: missing tensor '{}'", source, k);
    SEQLAB_CHECK(it->second.sizes() == t.sizes(), "{}: tensor '{}' has shape [{}], expected [{}]",
                 source, k, fmt::join(it->second.sizes().vec(), ","),
                 fmt::join(t.sizes().vec(), ","));
    t.copy_(it->second);
    ++seen;
  };
  for (auto& p : m.named_parameters()) put(p.key(), p.value());
  for (auto& b : m.named_buffers()) put(b.key(), b.value());
  SEQLAB_CHECK(seen == w.size(), "{}: {} tensors that the model does not have", source,
               w.size() - seen);
}

double finetune_accuracy(const ObjectivesConfig& cfg, int64_t vocab_size,
                         const std::map<std::string, torch::Tensor>& weights,
                         const std::string& task, const DownstreamData& train,
                         const DownstreamData& test, uint64_t seed) {
  const int64_t C = n_classes(task);
  PretrainModel m(cfg, vocab_size);
  load_module_weights(m.module(), weights, "pretrained weights");
  torch::manual_seed(seed);
  torch::nn::Linear head(m.d_model(), C);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& p : m.trainable()) named.emplace_back("model." + p.first, p.second);
  for (auto& p : named_params(*head, "head.")) named.push_back(p);
  std::vector<torch::Tensor> params;
  for (auto& p : named) params.push_back(p.second);
  AdamW opt(named, AdamWOptions{});
  auto gen = make_generator(mix_seed(seed, 2));
  const int64_t N = train.tokens.size(0), warmup = cfg.ft_steps / 10;
  m.module().train();
  for (int64_t s = 0; s < cfg.ft_steps; ++s) {
    auto rows = torch::randint(0, N, {std::min(cfg.ft_batch, N)}, gen);  // [b]
    auto [x, y] = head_inputs(task, m.features(train.tokens.index({rows})), train, rows);
    opt.zero_grad();
    torch::nn::functional::cross_entropy(head(x), y).backward();
    clip_grad_norm(params, 1.0);
    opt.step(lr_at(s, cfg.ft_steps, warmup, cfg.ft_lr, 0.1));
  }
  torch::NoGradGuard ng;
  m.module().eval();
  int64_t right = 0, total = 0;
  for (int64_t i = 0; i < test.tokens.size(0); i += kChunk) {
    auto rows = torch::arange(i, std::min(i + kChunk, test.tokens.size(0)));
    auto [x, y] = head_inputs(task, m.features(test.tokens.index({rows})), test, rows);
    right += (head(x).argmax(-1) == y).sum().item<int64_t>();
    total += y.size(0);
  }
  return static_cast<double>(right) / static_cast<double>(total);
}

}  // namespace seqlab
