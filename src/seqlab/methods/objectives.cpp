#include "seqlab/methods/objectives.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/optim.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace seqlab {

namespace {

bool is_pair_objective(const std::string& o) {
  return o == "clm_pairs" || o == "denoise" || o == "translate";
}

std::string own_stack(const std::string& o) {
  if (o == "clm" || o == "clm_pairs") return "decoder";
  if (o == "mlm") return "encoder";
  if (o == "denoise" || o == "translate") return "encdec";
  return "";
}

// Row-major [rows, T] int64 buffer -> tensor.
torch::Tensor to_tensor(const std::vector<int64_t>& v, int64_t rows, int64_t T) {
  return torch::tensor(v, torch::kLong).view({rows, T});
}

// The text-infilling noise of BART: about `ratio` of the n words are masked, in spans of 1-3
// positions; each maximal masked run becomes one MASK token.
std::vector<int64_t> infill_noise(const std::vector<int64_t>& s, double ratio, SplitMix& r) {
  const int64_t n = static_cast<int64_t>(s.size());
  std::vector<bool> marked(s.size(), false);
  const int64_t budget = std::max<int64_t>(1, std::llround(ratio * n));
  int64_t count = 0;
  while (count < budget) {
    const int64_t start = r.below(n), len = 1 + r.below(3);
    for (int64_t k = start; k < std::min(n, start + len); ++k)
      if (!marked[k]) marked[k] = true, ++count;
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < n; ++k) {
    if (!marked[k])
      out.push_back(s[k]);
    else if (k == 0 || !marked[k - 1])
      out.push_back(Grammar::kMask);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> n = {"clm",     "mlm",       "clm_pairs",
                                             "denoise", "translate", "none"};
  return n;
}

void ObjectivesConfig::validate() {
  const auto& names = objective_names();
  SEQLAB_CHECK(std::find(names.begin(), names.end(), objective) != names.end(),
               "unknown objective '{}' (known: clm, mlm, clm_pairs, denoise, translate, none)",
               objective);
  if (stack == "auto") {
    SEQLAB_CHECK(objective != "none",
                 "objective none needs an explicit --stack (decoder, encoder or encdec)");
    stack = own_stack(objective);
  }
  SEQLAB_CHECK(stack == "decoder" || stack == "encoder" || stack == "encdec",
               "unknown stack '{}' (known: decoder, encoder, encdec, auto)", stack);
  MixerConfig mc;
  mc.arch = arch;
  mc.d_model = d_model;
  mc.n_head = n_head;
  mc.max_len = kPairLen;
  mc.validate();
  const bool bidirectional = arch_entry(mc.arch).traits.attention;
  if (objective == "mlm")
    SEQLAB_CHECK(stack == "encoder",
                 "masked LM needs a bidirectional single-stack model (--stack encoder); --stack {} "
                 "{}",
                 stack,
                 stack == "decoder" ? "is causal-only: a masked word's right context is invisible"
                                    : "is an encoder-decoder (its sequence objective is denoise)");
  if (objective == "clm" || objective == "clm_pairs")
    SEQLAB_CHECK(stack == "decoder", "{} is a causal LM objective and needs --stack decoder; {}",
                 objective,
                 stack == "encoder"
                     ? "--stack encoder is bidirectional: every position sees the token it predicts"
                     : "--stack encdec is an encoder-decoder (use translate or denoise)");
  if (objective == "denoise" || objective == "translate")
    SEQLAB_CHECK(stack == "encdec",
                 "{} is a sequence-to-sequence objective and needs --stack encdec, not {}",
                 objective, stack);
  SEQLAB_CHECK(stack == "decoder" || bidirectional,
               "--stack {} needs a bidirectional mixer, which only softmax and linear attention "
               "have; '{}' is causal-only",
               stack, arch);
  SEQLAB_CHECK(n_layer >= (stack == "encdec" ? 2 : 1),
               "n_layer must be at least {} for --stack {}, got {}", stack == "encdec" ? 2 : 1,
               stack, n_layer);
  SEQLAB_CHECK(mlp_ratio >= 0, "mlp_ratio must be >= 0, got {}", mlp_ratio);
  SEQLAB_CHECK(steps >= 0, "steps must be >= 0, got {}", steps);
  SEQLAB_CHECK(batch >= 2, "batch must be at least 2 (pair objectives take batch/2 rows), got {}",
               batch);
  SEQLAB_CHECK(warmup >= 0, "warmup must be >= 0, got {}", warmup);
  SEQLAB_CHECK(lr > 0, "lr must be positive, got {}", lr);
  SEQLAB_CHECK(mlm_prob > 0 && mlm_prob <= 1, "mlm_prob must be in (0, 1], got {}", mlm_prob);
  SEQLAB_CHECK(noise > 0 && noise < 1, "noise must be in (0, 1), got {}", noise);
  SEQLAB_CHECK(probe_train >= 10, "probe_train must be at least 10, got {}", probe_train);
  SEQLAB_CHECK(probe_steps >= 1, "probe_steps must be at least 1, got {}", probe_steps);
  SEQLAB_CHECK(probe_lr > 0, "probe_lr must be positive, got {}", probe_lr);
  SEQLAB_CHECK(ft_train >= 1, "ft_train must be at least 1, got {}", ft_train);
  SEQLAB_CHECK(ft_steps >= 0, "ft_steps must be >= 0 (0 = no finetuning), got {}", ft_steps);
  SEQLAB_CHECK(ft_batch >= 1, "ft_batch must be at least 1, got {}", ft_batch);
  SEQLAB_CHECK(ft_lr > 0, "ft_lr must be positive, got {}", ft_lr);
  SEQLAB_CHECK(test_size >= 10, "test_size must be at least 10, got {}", test_size);
  SEQLAB_CHECK(threads >= 1, "threads must be at least 1, got {}", threads);
}

nlohmann::json ObjectivesConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  const_cast<ObjectivesConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

ObjectivesConfig ObjectivesConfig::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: objectives config must be a JSON object", source);
  ObjectivesConfig c;
  FromJsonVisitor v{j, source, {}};
  c.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown objectives field '{}'", source, it.key());
  return c;
}

int64_t rows_per_step(const std::string& objective, int64_t batch) {
  return is_pair_objective(objective) ? std::max<int64_t>(1, batch / 2) : batch;
}

ObjectiveBatch objective_batch(const Grammar& g, const ObjectivesConfig& cfg, uint64_t seed,
                               int64_t step) {
  const auto& obj = cfg.objective;
  SEQLAB_CHECK(obj != "none", "objective none has no batches");
  const int64_t rows = rows_per_step(obj, cfg.batch);
  // Meanings: the same stream for every objective. Choices (languages, noise): their own stream.
  const uint64_t stream = mix_seed(seed, static_cast<uint64_t>(step));
  SplitMix r{mix_seed(stream, 0x6f626a656374ULL)};
  const int L = Grammar::kLanguages;
  ObjectiveBatch b;
  if (obj == "clm" || obj == "clm_pairs") {
    const int64_t T = obj == "clm" ? kSentenceLen : kPairLen;
    std::vector<int64_t> seq(static_cast<size_t>(rows * (T + 1)), Grammar::kPad);
    for (int64_t j = 0; j < rows; ++j) {
      const auto m = g.sample(stream, static_cast<uint64_t>(j));
      const int src = static_cast<int>(r.below(L));
      std::vector<int64_t> row = {Grammar::kBos};
      for (auto t : g.render(m, src).tokens) row.push_back(t);
      if (obj == "clm_pairs") {
        const int tgt = static_cast<int>((src + 1 + r.below(L - 1)) % L);
        row.push_back(Grammar::kSep);
        row.push_back(Grammar::kLangTag0 + tgt);
        for (auto t : g.render(m, tgt).tokens) row.push_back(t);
      }
      row.push_back(Grammar::kEos);
      std::copy(row.begin(), row.end(), seq.begin() + j * (T + 1));
    }
    auto s = to_tensor(seq, rows, T + 1);  // [B,T+1]
    b.input = s.narrow(1, 0, T);           // [B,T]
    b.target = s.narrow(1, 1, T);          // [B,T] next tokens
    b.mask = b.target != Grammar::kPad;    // [B,T]
    return b;
  }
  if (obj == "mlm") {
    const int64_t T = kSentenceLen;
    std::vector<int64_t> in(static_cast<size_t>(rows * T), Grammar::kPad), tg = in;
    std::vector<int64_t> mk(static_cast<size_t>(rows * T), 0);
    for (int64_t j = 0; j < rows; ++j) {
      const auto m = g.sample(stream, static_cast<uint64_t>(j));
      const auto s = g.render(m, static_cast<int>(r.below(L))).tokens;
      const int64_t n = static_cast<int64_t>(s.size()), o = j * T;
      in[o] = tg[o] = Grammar::kBos;
      for (int64_t k = 0; k < n; ++k) in[o + 1 + k] = tg[o + 1 + k] = s[k];
      in[o + 1 + n] = tg[o + 1 + n] = Grammar::kEos;
      std::vector<int64_t> chosen;
      for (int64_t k = 0; k < n; ++k)
        if (r.coin(cfg.mlm_prob)) chosen.push_back(k);
      // A row may have nothing selected (the rate stays mlm_prob); only an empty batch gets one.
      if (j == rows - 1 && chosen.empty() && std::find(mk.begin(), mk.end(), 1) == mk.end())
        chosen.push_back(r.below(n));
      for (auto k : chosen) {
        mk[o + 1 + k] = 1;
        const double u = r.uniform();
        if (u < 0.8)
          in[o + 1 + k] = Grammar::kMask;
        else if (u < 0.9)
          in[o + 1 + k] = g.random_word(r.next());
      }
    }
    b.input = to_tensor(in, rows, T);
    b.target = to_tensor(tg, rows, T);
    b.mask = to_tensor(mk, rows, T).to(torch::kBool);
    return b;
  }
  // Encoder-decoder: source BOS x EOS, decoder <2lang> y -> y EOS.
  const int64_t S = kSentenceLen, T = kSentenceLen;
  std::vector<int64_t> src(static_cast<size_t>(rows * S), Grammar::kPad);
  std::vector<int64_t> seq(static_cast<size_t>(rows * (T + 1)), Grammar::kPad);
  for (int64_t j = 0; j < rows; ++j) {
    const auto m = g.sample(stream, static_cast<uint64_t>(j));
    const int sl = static_cast<int>(r.below(L));
    const int tl = obj == "translate" ? static_cast<int>((sl + 1 + r.below(L - 1)) % L) : sl;
    const auto x = g.render(m, sl).tokens, y = g.render(m, tl).tokens;
    const auto xin = obj == "denoise" ? infill_noise(x, cfg.noise, r) : x;
    src[j * S] = Grammar::kBos;
    std::copy(xin.begin(), xin.end(), src.begin() + j * S + 1);
    src[j * S + 1 + static_cast<int64_t>(xin.size())] = Grammar::kEos;
    const int64_t o = j * (T + 1);
    seq[o] = Grammar::kLangTag0 + tl;
    std::copy(y.begin(), y.end(), seq.begin() + o + 1);
    seq[o + 1 + static_cast<int64_t>(y.size())] = Grammar::kEos;
  }
  b.src = to_tensor(src, rows, S);
  b.src_valid = b.src != Grammar::kPad;
  auto s = to_tensor(seq, rows, T + 1);
  b.input = s.narrow(1, 0, T);
  b.target = s.narrow(1, 1, T);
  b.mask = b.target != Grammar::kPad;
  return b;
}

PretrainModel::PretrainModel(const ObjectivesConfig& cfg, int64_t vocab_size)
    : d_model_(cfg.d_model) {
  torch::manual_seed(cfg.seed);
  if (cfg.stack == "encdec") {
    EncDecConfig c;
    c.mixer.arch = cfg.arch;
    c.mixer.d_model = cfg.d_model;
    c.mixer.n_head = cfg.n_head;
    c.mixer.max_len = kSentenceLen;
    c.mixer.init_seed = cfg.seed;
    c.vocab_size = vocab_size;
    c.n_enc_layer = cfg.n_layer / 2;
    c.n_dec_layer = cfg.n_layer - cfg.n_layer / 2;
    c.mlp_ratio = cfg.mlp_ratio;
    encdec = EncDec(c);
  } else {
    ModelConfig c;
    c.mixer.arch = cfg.arch;
    c.mixer.d_model = cfg.d_model;
    c.mixer.n_head = cfg.n_head;
    c.mixer.max_len = kPairLen;
    c.mixer.init_seed = cfg.seed;
    c.mixer.causal = cfg.stack == "decoder";
    c.vocab_size = vocab_size;
    c.n_layer = cfg.n_layer;
    c.mlp_ratio = cfg.mlp_ratio;
    // ModelConfig refuses an lm head on a bidirectional model (it is for next-token prediction), so
    // the encoder gets the smallest head it accepts, a 2-class tagger that nothing uses: logits()
    // always reads the tied embedding, and that head is left out of the optimizer and the counts.
    c.head = c.mixer.causal ? "lm" : "tag";
    c.n_classes = c.mixer.causal ? 0 : 2;
    c.tie_embeddings = true;
    single = SeqModel(c);
  }
}

torch::nn::Module& PretrainModel::module() {
  if (encdec) return *encdec;
  return *single;
}

torch::Tensor PretrainModel::loss(const ObjectiveBatch& b) {
  auto logits = encdec ? encdec->forward(b.src, b.src_valid, b.input)  // [B,T,V]
                       : torch::matmul(single->hidden(b.input),
                                       single->wte->weight.t());  // [B,T,D] x [D,V] -> [B,T,V]
  auto flat = logits.reshape({-1, logits.size(-1)});              // [B*T,V]
  auto sel = b.mask.reshape({-1});                                // [B*T]
  return torch::nn::functional::cross_entropy(flat.index({sel}),
                                              b.target.reshape({-1}).index({sel}));
}

std::vector<std::pair<std::string, torch::Tensor>> PretrainModel::trainable() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : module().named_parameters())
    if (encdec || p.key().rfind("head.", 0) != 0) out.emplace_back(p.key(), p.value());
  return out;
}

torch::Tensor PretrainModel::features(const torch::Tensor& tokens) {
  return encdec ? encdec->encode(tokens) : single->hidden(tokens);  // [B,T,D]
}

PretrainOutcome pretrain(PretrainModel& m, const Grammar& g, const ObjectivesConfig& cfg) {
  PretrainOutcome o;
  o.parameters = 0;
  for (const auto& p : m.trainable()) o.parameters += p.second.numel();
  if (cfg.objective == "none") return o;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  std::vector<torch::Tensor> params;
  for (const auto& p : m.trainable()) {
    named.push_back(p);
    params.push_back(p.second);
  }
  AdamW opt(named, AdamWOptions{});
  m.module().train();
  const int64_t window = std::max<int64_t>(1, cfg.steps / 10);
  double first = 0, last = 0;
  for (int64_t s = 0; s < cfg.steps; ++s) {
    auto b = objective_batch(g, cfg, cfg.seed, s);
    opt.zero_grad();
    auto loss = m.loss(b);
    const double l = loss.item<double>();
    SEQLAB_CHECK(std::isfinite(l), "pretraining ({}): non-finite loss at step {}", cfg.objective,
                 s);
    loss.backward();
    clip_grad_norm(params, 1.0);
    opt.step(lr_at(s, cfg.steps, cfg.warmup, cfg.lr, 0.1));
    if (s < window) first += l / window;
    if (s >= cfg.steps - window) last += l / window;
    if ((s + 1) % std::max<int64_t>(1, cfg.steps / 5) == 0)
      log_info("pretrain {} ({}): step {}/{} loss {:.4f}", cfg.objective, cfg.stack, s + 1,
               cfg.steps, l);
  }
  o.first_loss = first;
  o.last_loss = last;
  // Held-out: 512 rows from a stream no training step uses.
  {
    torch::NoGradGuard ng;
    m.module().eval();
    ObjectivesConfig c = cfg;
    c.batch = is_pair_objective(cfg.objective) ? 1024 : 512;
    o.heldout_loss =
        m.loss(objective_batch(g, c, mix_seed(cfg.seed, 0x68656c64ULL), 0)).item<double>();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace seqlab
