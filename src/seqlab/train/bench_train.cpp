#include "seqlab/train/bench_train.h"

#include "seqlab/core/blas_check.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/model/model.h"
#include "seqlab/train/optim.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>

namespace seqlab {

void TrainBenchConfig::validate() const {
  SEQLAB_CHECK(d_model > 0 && n_layer > 0 && batch > 0 && length > 0 && vocab > 1,
               "bench train: --d-model, --n-layer, --batch, --length must be positive");
  SEQLAB_CHECK(steps > 0 && reps > 0 && threads > 0 && form_batch > 0,
               "bench train: --steps, --reps, --threads, --form-batch must be positive");
  for (auto L : form_lengths)
    SEQLAB_CHECK(L > 0, "bench train: --form-lengths must be positive, got {}", L);
}

namespace {

using clock = std::chrono::steady_clock;

std::pair<double, double> mean_sd(const std::vector<double>& v) {
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(s / static_cast<double>(v.size() - 1)) : 0.0};
}

// tokens/s over `steps` calls of f, once per rep, after one warm-up call.
template <class F>
std::pair<double, double> throughput(const TrainBenchConfig& cfg, double tokens_per_call, F&& f) {
  f();
  std::vector<double> v;
  for (int64_t r = 0; r < cfg.reps; ++r) {
    const auto t0 = clock::now();
    for (int64_t s = 0; s < cfg.steps; ++s) f();
    const double sec = std::chrono::duration<double>(clock::now() - t0).count();
    v.push_back(tokens_per_call * static_cast<double>(cfg.steps) / sec);
  }
  return mean_sd(v);
}

}  // namespace

std::vector<TrainBenchRow> run_train_bench(const TrainBenchConfig& cfg) {
  cfg.validate();
  set_compute_threads(static_cast<int>(cfg.threads));
  std::vector<TrainBenchRow> rows;
  for (const auto& arch : cfg.archs) {
    ModelConfig mc;
    mc.mixer.arch = arch;
    mc.mixer.d_model = cfg.d_model;
    mc.mixer.max_len = cfg.length;
    mc.n_layer = cfg.n_layer;
    mc.vocab_size = cfg.vocab;
    mc.validate();
    torch::manual_seed(cfg.seed);
    SeqModel model(mc);
    model->train();
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
    AdamW opt(named, AdamWOptions{});
    auto tokens = torch::randint(0, cfg.vocab, {cfg.batch, cfg.length + 1}, torch::kLong);
    auto x = tokens.narrow(1, 0, cfg.length), y = tokens.narrow(1, 1, cfg.length);
    log_info("bench train: {} (B {}, T {})", arch, cfg.batch, cfg.length);
    auto [m, sd] = throughput(cfg, static_cast<double>(cfg.batch * cfg.length), [&] {
      auto logits = model->forward(x);
      auto loss =
          torch::nn::functional::cross_entropy(logits.reshape({-1, cfg.vocab}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      opt.step(1e-3);
    });
    rows.push_back({"arch", arch, cfg.length, cfg.batch, m, sd, 0});
  }
  for (auto L : cfg.form_lengths) {
    MixerConfig c;
    c.arch = "linear";
    c.feature_map = cfg.feature_map;
    c.d_model = cfg.d_model;
    c.max_len = L;
    c.validate();
    torch::manual_seed(cfg.seed);
    LinearAttentionImpl mixer(c);
    auto x = torch::randn({cfg.form_batch, L, cfg.d_model}, torch::requires_grad());
    double quad = 0;
    for (auto form : {LinearAttentionImpl::Form::quadratic, LinearAttentionImpl::Form::chunked}) {
      const bool q = form == LinearAttentionImpl::Form::quadratic;
      log_info("bench train: linear attention ({}) {} at T {}", cfg.feature_map,
               q ? "quadratic" : "chunked", L);
      auto [m, sd] = throughput(cfg, static_cast<double>(cfg.form_batch * L), [&] {
        mixer.zero_grad();
        x.mutable_grad() = torch::Tensor();
        mixer.forward_form(x, form).sum().backward();
      });
      if (q) quad = m;
      rows.push_back({"linear_form", q ? "quadratic" : "chunked", L, cfg.form_batch, m, sd,
                      q ? 0.0 : m / quad});
    }
  }
  return rows;
}

std::string format_train_bench(const std::vector<TrainBenchRow>& rows, const std::string& format) {
  SEQLAB_CHECK(format == "md" || format == "csv" || format == "json",
               "--format must be md, csv or json, got '{}'", format);
  std::string out;
  if (format == "json") {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"kind", r.kind},
                          {"name", r.name},
                          {"length", r.length},
                          {"batch", r.batch},
                          {"tokens_per_s", r.tokens_per_s},
                          {"sd", r.sd}};
      if (r.ratio > 0) j["chunked_over_quadratic"] = r.ratio;
      a.push_back(j);
    }
    return a.dump() + "\n";
  }
  if (format == "csv") {
    out = "kind,name,length,batch,tokens_per_s,sd,chunked_over_quadratic\n";
    for (const auto& r : rows)
      out += fmt::format("{},{},{},{},{:.1f},{:.1f},{}\n", r.kind, r.name, r.length, r.batch,
                         r.tokens_per_s, r.sd, r.ratio > 0 ? fmt::format("{:.3f}", r.ratio) : "");
    return out;
  }
  out = "| architecture | B × T | training tokens/s |\n|---|---:|---:|\n";
  for (const auto& r : rows)
    if (r.kind == "arch")
      out += fmt::format("| {} | {} × {} | {:.0f} ± {:.0f} |\n", r.name, r.batch, r.length,
                         r.tokens_per_s, r.sd);
  out +=
      "\n| linear attention form | T | forward+backward tokens/s | chunked / quadratic |\n"
      "|---|---:|---:|---:|\n";
  for (const auto& r : rows)
    if (r.kind == "linear_form")
      out += fmt::format("| {} | {} | {:.0f} ± {:.0f} | {} |\n", r.name, r.length, r.tokens_per_s,
                         r.sd, r.ratio > 0 ? fmt::format("{:.2f}×", r.ratio) : "");
  return out;
}

}  // namespace seqlab
