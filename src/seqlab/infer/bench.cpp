#include "seqlab/infer/bench.h"

#include "seqlab/core/error.h"
#include "seqlab/core/rng.h"
#include "seqlab/infer/engine.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/infer/roofline.h"
#include "seqlab/infer/sampler.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

extern char** environ;

namespace seqlab::infer {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double mean = 0, sd = 0;
};

// Mean and sample standard deviation (0 for one value).
Stats stats_of(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  return s;
}

// Runs `<exe> bench decode-run ...` and returns its measurement with the child's peak RSS.
DecodeMeasurement measure_in_child(const DecodeBenchConfig& cfg, const std::string& model,
                                   const std::string& engine, const std::string& weights,
                                   int64_t context, int64_t batch) {
  int fds[2];
  SEQLAB_CHECK(pipe(fds) == 0, "bench: pipe failed: {}", std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<std::string> args = {cfg.worker_exe,
                                   "bench",
                                   "decode-run",
                                   "--model",
                                   model,
                                   "--engine",
                                   engine,
                                   "--context",
                                   std::to_string(context),
                                   "--gen",
                                   std::to_string(cfg.gen),
                                   "--seed",
                                   std::to_string(cfg.seed),
                                   "--threads",
                                   std::to_string(cfg.threads),
                                   "--batch",
                                   std::to_string(batch),
                                   "--decoder-threads",
                                   std::to_string(cfg.decoder_threads),
                                   "--weights",
                                   weights,
                                   "-q"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cfg.worker_exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    fail("bench: could not start {}: {}", cfg.worker_exe, std::strerror(rc));
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const auto nl = out.rfind('\n');
  const std::string last = nl == std::string::npos ? out : out.substr(nl + 1);
  SEQLAB_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "bench: {} ({} engine, context {}) failed: {}", model, engine, context,
               last.empty() ? "no output" : last);
  DecodeMeasurement m;
  try {
    const auto j = nlohmann::json::parse(last);
    m.prefill_s = j.at("prefill_s").get<double>();
    m.gen_s = j.at("gen_s").get<double>();
    m.state_bytes = j.at("state_bytes").get<int64_t>();
    m.peak_rss_kb = j.at("peak_rss_kb").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail("bench: unexpected output from the worker for {}: '{}' ({})", model, last, e.what());
  }
  // The child's own VmHWM, not wait4's ru_maxrss: a posix_spawn child's maxrss starts at this
  // process's peak, and this process has loaded every model (core/own_memory.h).
  if (m.peak_rss_kb < 0) m.peak_rss_kb = ru.ru_maxrss;  // no /proc: an upper bound
  return m;
}

struct ModelInfo {
  std::string arch;
  int64_t limit = -1;      // max_sequence(), -1 = unbounded
  std::string fast_error;  // why the fast engine cannot run it (empty when it can)
  // Per weight format (cfg.weights), per context: a generated token's cost (the middle one).
  std::map<std::string, std::vector<TokenCost>> costs;
};

ModelInfo inspect_model(const std::string& dir, bool want_fast, const DecodeBenchConfig& cfg) {
  auto lm = load_model_dir(dir);
  const auto& mc = lm.config;
  SEQLAB_CHECK(mc.head == "lm" && mc.mixer.causal,
               "bench decode: {} is not a causal language model (head '{}')", dir, mc.head);
  if (lm.model->adapters) lm.model->merge_adapters();
  ModelInfo info;
  info.arch = arch_label(mc.mixer);
  info.limit = max_sequence(*lm.model);
  if (want_fast) {
    info.fast_error = fast_support(*lm.model);
    // The generated tokens sit at positions C .. C+gen-1; their mean cost is the middle one's.
    for (const auto& w : cfg.weights)
      for (int64_t C : cfg.contexts)
        info.costs[w].push_back(token_cost(*lm.model, C + cfg.gen / 2, parse_weight_format(w)));
  }
  return info;
}

}  // namespace

void DecodeBenchConfig::validate() const {
  SEQLAB_CHECK(!models.empty(), "--model: give at least one model directory");
  SEQLAB_CHECK(!contexts.empty(), "--contexts: give at least one context length");
  for (auto c : contexts) SEQLAB_CHECK(c >= 1, "--contexts: {} is not a positive length", c);
  SEQLAB_CHECK(gen >= 1, "--gen must be >= 1, got {}", gen);
  SEQLAB_CHECK(reps >= 1, "--reps must be >= 1, got {}", reps);
  SEQLAB_CHECK(threads >= 1, "--threads must be >= 1, got {}", threads);
  SEQLAB_CHECK(decoder_threads >= 1, "--decoder-threads must be >= 1, got {}", decoder_threads);
  SEQLAB_CHECK(!batches.empty(), "--batch: give at least one batch size");
  for (auto b : batches) SEQLAB_CHECK(b >= 1, "--batch: {} is not a positive batch size", b);
  SEQLAB_CHECK(!engines.empty(), "--engines: give fast, torch or both");
  for (const auto& e : engines)
    SEQLAB_CHECK(e == "fast" || e == "torch" || e == "fast-rows",
                 "--engines: unknown engine '{}' (fast, torch, fast-rows)", e);
  SEQLAB_CHECK(!weights.empty(), "--weights: give at least one of f32, bf16, int8");
  for (const auto& w : weights) parse_weight_format(w);
}

namespace {

SamplerConfig greedy_config() {
  SamplerConfig greedy;
  greedy.temperature = 0;
  return greedy;
}

// The tokens of a seeded random prompt.
std::vector<int64_t> random_tokens(uint64_t seed, int64_t n, int64_t V) {
  std::vector<int64_t> tokens(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] =
        static_cast<int64_t>(mix_seed(seed, static_cast<uint64_t>(i)) % static_cast<uint64_t>(V));
  return tokens;
}

// measure_decode with batch > 1: `batch` sequences on one FastModel, generated by step_batch.
DecodeMeasurement measure_batch(SeqModelImpl& model, int64_t context, int64_t gen, uint64_t seed,
                                int64_t batch, WeightFormat weights) {
  FastModel fm(model, weights);
  const int64_t V = fm.vocab_size();
  std::vector<DecoderState> states(batch, fm.init_state());
  std::vector<DecoderState*> ptrs;
  for (auto& s : states) ptrs.push_back(&s);
  std::vector<float> logits(batch * V);
  std::vector<int64_t> next(batch);
  Sampler sampler(greedy_config(), V);
  DecodeMeasurement m;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batch; ++b) {
    const auto tokens = random_tokens(seed + static_cast<uint64_t>(b), context, V);
    fm.prefill(tokens.data(), context, states[b], logits.data() + b * V);
  }
  m.prefill_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < gen; ++i) {
    for (int64_t b = 0; b < batch; ++b)
      next[b] = sampler.sample(logits.data() + b * V, states[b].pos);
    fm.step_batch(next.data(), ptrs.data(), batch, logits.data());
  }
  m.gen_s = seconds_since(t0);
  m.state_bytes = batch * fm.state_size() * static_cast<int64_t>(sizeof(float));
  return m;
}

}  // namespace

DecodeMeasurement measure_decode(const std::string& model_dir, const std::string& engine,
                                 int64_t context, int64_t gen, uint64_t seed, int64_t batch,
                                 int64_t decoder_threads, WeightFormat weights) {
  SEQLAB_CHECK(context >= 1 && gen >= 1 && batch >= 1,
               "bench: context, gen and batch must be >= 1");
  SEQLAB_CHECK(batch == 1 || engine.rfind("fast", 0) == 0,
               "bench: batch {} needs a fast engine, not '{}'", batch, engine);
  auto lm = load_model_dir(model_dir);
  if (lm.model->adapters) lm.model->merge_adapters();
  // fast-rows: the fast engine with its prefill as one matvec per token (no GEMM tiles), for
  // comparison; the measurement runs in a child process of its own.
  infer::set_prefill_tiled(engine != "fast-rows");
  infer::set_threads(static_cast<int>(decoder_threads));
  const int64_t limit = max_sequence(*lm.model);
  SEQLAB_CHECK(limit < 0 || context + gen <= limit,
               "bench: context {} + {} generated tokens exceed the max context {}", context, gen,
               limit);
  SEQLAB_CHECK(weights == WeightFormat::f32 || engine.rfind("fast", 0) == 0,
               "bench: weights {} need a fast engine, not '{}'", weight_format_name(weights),
               engine);
  if (batch > 1) return measure_batch(*lm.model, context, gen, seed, batch, weights);
  auto e = make_engine(engine == "fast-rows" ? "fast" : engine, *lm.model, weights);
  const int64_t V = e->vocab_size();
  const auto tokens = random_tokens(seed, context, V);
  std::vector<float> logits(V);
  Sampler sampler(greedy_config(), V);
  DecodeMeasurement m;
  auto t0 = std::chrono::steady_clock::now();
  e->prefill(tokens.data(), context, logits.data());
  m.prefill_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < gen; ++i) e->step(sampler.sample(logits.data(), e->pos()), logits.data());
  m.gen_s = seconds_since(t0);
  m.state_bytes = e->state_bytes();
  return m;
}

namespace {

// One (model, context, batch) cell of the grid: every engine's repetitions (each fast engine once
// per weight format), then its pp and tg rows.
struct Variant {
  std::string engine, weights;
  std::string key() const { return engine + "/" + weights; }
};

// The repetitions of one cell, variants interleaved inside each repetition: every variant sees the
// same machine load. Variants with a note are skipped.
std::map<std::string, std::vector<DecodeMeasurement>> run_variants(
    const DecodeBenchConfig& cfg, const std::string& model, int64_t C, int64_t B,
    const std::vector<Variant>& variants, const std::map<std::string, std::string>& notes,
    const std::function<void(const std::string&)>& progress) {
  std::map<std::string, std::vector<DecodeMeasurement>> runs;
  for (int64_t r = 0; r < cfg.reps; ++r)
    for (const auto& v : variants) {
      if (notes.count(v.key())) continue;
      if (progress)
        progress(fmt::format("bench decode: {} {} {} context {} batch {} rep {}/{}", model,
                             v.engine, v.weights, C, B, r + 1, cfg.reps));
      runs[v.key()].push_back(measure_in_child(cfg, model, v.engine, v.weights, C, B));
    }
  return runs;
}

// The pp or tg row of one variant from its measurements.
DecodeBenchRow variant_row(const std::vector<DecodeMeasurement>& ms, DecodeBenchRow row,
                           int64_t B) {
  std::vector<double> tps, mspt;
  double peak = 0;
  for (const auto& m : ms) {
    const double s = row.test == "pp" ? m.prefill_s : m.gen_s;
    const double n = static_cast<double>(row.tokens * B);
    tps.push_back(n / s);
    mspt.push_back(1e3 * s / n);
    peak = std::max(peak, static_cast<double>(m.peak_rss_kb) / 1024.0);
  }
  const auto st = stats_of(tps);
  row.reps = static_cast<int64_t>(ms.size());
  row.tokens_per_s = st.mean;
  row.sd = st.sd;
  row.ms_per_token = stats_of(mspt).mean;
  row.peak_rss_mb = peak;
  row.state_mb = static_cast<double>(ms.back().state_bytes) / (1024.0 * 1024.0);
  return row;
}

void run_cell(const DecodeBenchConfig& cfg, const std::string& model, const ModelInfo& info,
              size_t ci, int64_t B, double peak_gflops, std::vector<DecodeBenchRow>& rows,
              const std::function<void(const std::string&)>& progress) {
  const int64_t C = cfg.contexts[ci];
  const bool want_fast = !info.costs.empty();
  std::vector<Variant> variants;
  for (const auto& e : cfg.engines) {
    if (e.rfind("fast", 0) != 0)
      variants.push_back({e, "f32"});  // the torch engine runs the fp32 LibTorch model
    else
      for (const auto& w : cfg.weights) variants.push_back({e, w});
  }
  std::map<std::string, std::string> notes;
  for (const auto& v : variants) {
    const auto& e = v.engine;
    if (info.limit >= 0 && C + cfg.gen > info.limit)
      notes[v.key()] = fmt::format("skipped: context {} + {} generated > max context {}", C,
                                   cfg.gen, info.limit);
    else if (e.rfind("fast", 0) == 0 && !info.fast_error.empty())
      notes[v.key()] = "skipped: the fast engine does not support this model: " + info.fast_error;
    else if (e.rfind("fast", 0) != 0 && B > 1)
      notes[v.key()] = fmt::format("skipped: batch {} runs on the fast engine only", B);
  }
  // The bandwidth of the roofline, measured at this cell's working set (weights + state) per
  // format; a single sequence's floor (a batch reads the weights once for all its rows).
  std::map<std::string, Floor> floors;
  if (want_fast && B == 1)
    for (const auto& w : cfg.weights)
      if (!notes.count("fast/" + w)) {
        const auto& cost = info.costs.at(w)[ci];
        floors[w] = floor_of(cost, read_bandwidth_gbs(cost.bytes()), peak_gflops);
      }
  auto runs = run_variants(cfg, model, C, B, variants, notes, progress);
  std::map<std::string, double> tg_mean;
  const size_t first = rows.size();
  for (const auto& v : variants) {
    for (const char* test : {"pp", "tg"}) {
      DecodeBenchRow row;
      row.model = model;
      row.arch = info.arch;
      row.engine = v.engine;
      row.weights = v.weights;
      row.test = test;
      row.context = C;
      row.batch = B;
      row.tokens = row.test == "pp" ? C : cfg.gen;
      if (notes.count(v.key())) {
        row.note = notes[v.key()];
        rows.push_back(row);
        continue;
      }
      row = variant_row(runs[v.key()], row, B);
      if (row.test == "tg") tg_mean[v.key()] = row.tokens_per_s;
      if (row.test == "tg" && v.engine.rfind("fast", 0) == 0 && info.costs.count(v.weights))
        row.weight_bytes = info.costs.at(v.weights)[ci].weight_bytes;
      if (row.test == "tg" && v.engine == "fast" && floors.count(v.weights) &&
          floors[v.weights].ms() > 0) {
        row.floor_ms = floors[v.weights].ms();
        row.x_floor = row.ms_per_token / row.floor_ms;
      }
      rows.push_back(row);
    }
  }
  // fast / torch: each fast row against the torch engine's fp32 tg speed; the torch row carries
  // the first weight format's ratio (f32 by default).
  if (!tg_mean.count("torch/f32") || tg_mean["torch/f32"] <= 0) return;
  for (size_t i = first; i < rows.size(); ++i) {
    if (rows[i].test != "tg") continue;
    const std::string w = rows[i].engine == "torch" ? cfg.weights.front() : rows[i].weights;
    if (tg_mean.count("fast/" + w))
      rows[i].fast_over_torch = tg_mean["fast/" + w] / tg_mean["torch/f32"];
  }
}

}  // namespace

std::vector<DecodeBenchRow> run_decode_bench(
    const DecodeBenchConfig& cfg, const std::function<void(const std::string&)>& progress) {
  cfg.validate();
  const bool want_fast = std::any_of(cfg.engines.begin(), cfg.engines.end(),
                                     [](const std::string& e) { return e.rfind("fast", 0) == 0; });
  // Every model is checked before anything runs.
  std::vector<ModelInfo> infos;
  for (const auto& m : cfg.models) infos.push_back(inspect_model(m, want_fast, cfg));
  // The FLOP ceiling of the roofline, once per run.
  double peak_gflops = 0;
  for (const auto& info : infos)
    if (want_fast && info.fast_error.empty() && peak_gflops == 0) peak_gflops = peak_fma_gflops();

  std::vector<DecodeBenchRow> rows;
  for (size_t mi = 0; mi < cfg.models.size(); ++mi) {
    if (want_fast && !infos[mi].fast_error.empty() && progress)
      progress(fmt::format("bench decode: the fast engine does not support {} ({}); skipping it",
                           cfg.models[mi], infos[mi].fast_error));
    for (size_t ci = 0; ci < cfg.contexts.size(); ++ci)
      for (int64_t B : cfg.batches)
        run_cell(cfg, cfg.models[mi], infos[mi], ci, B, peak_gflops, rows, progress);
  }
  return rows;
}

}  // namespace seqlab::infer
