#include "seqlab/infer/roofline.h"

#include "seqlab/core/error.h"
#include "seqlab/infer/bench.h"
#include "seqlab/infer/engine.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace seqlab::infer {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// 64-byte aligned floats, freed by the deleter.
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeDeleter>;

AlignedFloats aligned_floats(int64_t n) {
  const auto bytes = static_cast<size_t>((n * 4 + 63) / 64 * 64);
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  SEQLAB_CHECK(p != nullptr, "roofline: could not allocate {} bytes", bytes);
  return AlignedFloats(p);
}

// Sum of n floats (n a multiple of 64), eight independent accumulators so that the adds never
// wait on each other: the loop is bound by the loads alone.
__attribute__((target("avx2"))) float stream_sum_avx2(const float* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int64_t i = 0; i < n; i += 64) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
    a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
    a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
    a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float t = 0;
  for (float v : lanes) t += v;
  return t;
}

float stream_sum_scalar(const float* p, int64_t n) {
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] += p[i + k];
  float t = 0;
  for (float v : a) t += v;
  return t;
}

// Twelve independent chains of a = a * m + c (FMA latency × throughput on current x86 cores is
// at most ten in flight), 8 lanes each: 192 FLOPs per iteration. The values converge to
// c / (1 - m) = 0.1, so no denormals appear.
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-4f);
  __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
         a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
         a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
         a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = _mm256_fmadd_ps(a0, m, c);
    a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c);
    a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c);
    a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
    a10 = _mm256_fmadd_ps(a10, m, c);
    a11 = _mm256_fmadd_ps(a11, m, c);
    // Opaque to the optimiser (no folding, no hoisting), and the chains stay in registers.
    asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    asm volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

float fma_chains_scalar(int64_t iters) {
  float a[12];
  for (int k = 0; k < 12; ++k) a[k] = static_cast<float>(k);
  for (int64_t i = 0; i < iters; ++i)
    for (float& v : a) {
      v = v * 0.999f + 1e-4f;
      asm volatile("" : "+x"(v));
    }
  float s = 0;
  for (float v : a) s += v;
  return s;
}

volatile float g_sink = 0;  // keeps the measured loops from being optimised away

// Runs work(n) with n doubling until one call takes min_seconds, then `reps` timed calls of that
// n; returns the best units-per-second, where units(n) is what one call of size n does.
template <class Work, class Units>
double best_rate(Work work, Units units, int64_t n, int reps, double min_seconds) {
  for (;;) {
    const auto t0 = Clock::now();
    work(n);
    if (seconds_since(t0) >= min_seconds || n > (int64_t{1} << 40)) break;
    n *= 2;
  }
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    work(n);
    best = std::max(best, units(n) / seconds_since(t0));
  }
  return best;
}

std::string arch_name(const ModelConfig& mc) {
  return arch_label(mc.mixer);
}

std::string size_name(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{:.3g} MiB", bytes / 1048576.0);
  return fmt::format("{:.3g} KiB", bytes / 1024.0);
}

}  // namespace

TokenCost token_cost(SeqModelImpl& model, int64_t p, WeightFormat format) {
  SEQLAB_CHECK(p >= 0, "token_cost: position {} is negative", p);
  const auto& cfg = model.config();
  const int64_t D = cfg.mixer.d_model;
  int64_t weight_bytes = 0, madds = 0;
  // A matrix in `format` (its last dimension is the input); the lookups and vectors stay fp32.
  auto matrix = [&](const torch::Tensor& t) {
    return seqlab::weight_bytes(format, t.numel() / t.size(-1), t.size(-1));
  };
  for (const auto& [name, t] : model_tensors(model)) {
    const int64_t n = t.numel();
    if (name == "wte.weight") {
      // One row is looked up; a tied head reads all of it in one matrix-vector product.
      weight_bytes += cfg.tie_embeddings ? matrix(t) : 4 * D;
      if (cfg.tie_embeddings) madds += n;
    } else if (name == "wpe.weight") {
      weight_bytes += 4 * D;
    } else {
      weight_bytes += t.dim() == 2 ? matrix(t) : 4 * n;
      if (t.dim() >= 2) madds += n;
    }
  }
  int64_t state = 0, state_flops = 0;
  if (arch_entry(cfg.mixer.arch).traits.kv_cache) {
    // Keys and values of p + 1 tokens, G kv heads; every query head reads its group's.
    const int64_t Dkv = cfg.mixer.kv_heads() * cfg.mixer.d_head();
    state = 2 * (p + 1) * Dkv * cfg.n_layer;
    state_flops = 4 * (p + 1) * D * cfg.n_layer;
  } else {
    auto s = model.init_state(1);
    for (auto& l : s.layers)
      l->for_each([&state](const std::string&, torch::Tensor& t) {
        // Floating tensors only: a position counter (linear attention's pos) is not read.
        if (t.defined() && t.is_floating_point()) state += t.numel();
      });
    state_flops = 4 * state;
  }
  TokenCost c;
  c.weight_bytes = weight_bytes;
  c.state_bytes = 4 * state;
  c.flops = 2 * madds + state_flops;
  return c;
}

double read_bandwidth_gbs(int64_t bytes, int reps, double min_seconds) {
  SEQLAB_CHECK(bytes > 0, "read_bandwidth_gbs: {} bytes", bytes);
  const int64_t n = (bytes + 255) / 256 * 64;  // floats, a multiple of 64
  auto buf = aligned_floats(n);
  for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<float>(i & 7);  // touches every page
  const bool avx2 = cpu_has_avx2_fma();
  const float* p = buf.get();
  return best_rate(
             [&](int64_t passes) {
               float s = 0;
               for (int64_t k = 0; k < passes; ++k)
                 s += avx2 ? stream_sum_avx2(p, n) : stream_sum_scalar(p, n);
               g_sink = s;
             },
             [&](int64_t passes) { return 4.0 * static_cast<double>(n * passes); }, 1, reps,
             min_seconds) /
         1e9;
}

double peak_fma_gflops(int reps) {
  const bool avx2 = cpu_has_avx2_fma();
  return best_rate(
             [&](int64_t iters) {
               g_sink = avx2 ? fma_chains_avx2(iters) : fma_chains_scalar(iters);
             },
             [&](int64_t iters) { return (avx2 ? 192.0 : 24.0) * static_cast<double>(iters); },
             1 << 12, reps, 0.003) /
         1e9;
}

double matvec_gflops(int64_t rows, int64_t cols, int reps) {
  SEQLAB_CHECK(rows > 0 && cols > 0, "matvec_gflops: {} x {}", rows, cols);
  auto W = aligned_floats(rows * cols), x = aligned_floats(cols), y = aligned_floats(rows);
  for (int64_t i = 0; i < rows * cols; ++i) W[i] = static_cast<float>((i % 13) - 6) * 0.01f;
  for (int64_t c = 0; c < cols; ++c) x[c] = 1.0f;
  return best_rate(
             [&](int64_t calls) {
               for (int64_t k = 0; k < calls; ++k)
                 matvec(W.get(), nullptr, x.get(), y.get(), rows, cols);
               g_sink = y[rows - 1];
             },
             [&](int64_t calls) { return 2.0 * static_cast<double>(rows * cols * calls); }, 1, reps,
             0.003) /
         1e9;
}

Floor floor_of(const TokenCost& c, double bandwidth_gbs, double peak_gflops) {
  SEQLAB_CHECK(bandwidth_gbs > 0 && peak_gflops > 0, "roofline: rates must be positive");
  Floor f;
  f.bytes_ms = 1e3 * static_cast<double>(c.bytes()) / (bandwidth_gbs * 1e9);
  f.flops_ms = 1e3 * static_cast<double>(c.flops) / (peak_gflops * 1e9);
  return f;
}

void RooflineConfig::validate() const {
  for (auto c : contexts) SEQLAB_CHECK(c >= 1, "--contexts: {} is not a positive length", c);
  SEQLAB_CHECK(!contexts.empty(), "--contexts: give at least one context length");
  SEQLAB_CHECK(gen >= 0, "--gen must be >= 0, got {}", gen);
  SEQLAB_CHECK(reps >= 1, "--reps must be >= 1, got {}", reps);
  SEQLAB_CHECK(dram_mb >= 64, "--dram-mb must be >= 64 (far larger than the cache), got {}",
               dram_mb);
}

RooflineMachine measure_machine(const RooflineConfig& cfg) {
  cfg.validate();
  RooflineMachine m;
  m.description = machine_description();
  m.kernel = kernel_name(active_kernel());
  for (int64_t kb : {32, 512, 4096, 16384, 24576})
    m.bandwidth.emplace_back(kb * 1024, read_bandwidth_gbs(kb * 1024));
  m.dram_gbs = read_bandwidth_gbs(cfg.dram_mb << 20, 3, 0.05);
  m.bandwidth.emplace_back(cfg.dram_mb << 20, m.dram_gbs);
  m.peak_gflops = peak_fma_gflops();
  m.matvec_cache_gflops = matvec_gflops(512, 512);      // 1 MiB: in L2 / L3
  m.matvec_dram_gflops = matvec_gflops(8192, 4096, 5);  // 128 MiB: from DRAM
  return m;
}

std::vector<RooflineRow> run_roofline(const RooflineConfig& cfg, const RooflineMachine& machine) {
  cfg.validate();
  std::vector<RooflineRow> rows;
  for (const auto& dir : cfg.models) {
    auto lm = load_model_dir(dir);
    if (lm.model->adapters) lm.model->merge_adapters();
    const auto why = fast_support(*lm.model);
    const int64_t limit = max_sequence(*lm.model);
    for (int64_t C : cfg.contexts) {
      RooflineRow r;
      r.model = dir;
      r.arch = arch_name(lm.config);
      r.context = C;
      // The generated tokens sit at positions C .. C+gen-1: the cost of the middle one is their
      // mean (it is linear in the position).
      r.cost = token_cost(*lm.model, C + cfg.gen / 2);
      r.bandwidth_gbs = read_bandwidth_gbs(r.cost.bytes());
      r.floor = floor_of(r.cost, r.bandwidth_gbs, machine.peak_gflops);
      r.dram_floor = floor_of(r.cost, machine.dram_gbs, machine.peak_gflops);
      if (!why.empty()) {
        r.note = "fast engine not measured: " + why;
      } else if (limit >= 0 && C + cfg.gen > limit) {
        r.note = fmt::format("not measured: context {} + {} generated > max context {}", C, cfg.gen,
                             limit);
      } else if (cfg.gen > 0) {
        std::vector<double> ms;
        for (int64_t k = 0; k < cfg.reps; ++k) {
          const auto m = measure_decode(dir, "fast", C, cfg.gen, 0);
          ms.push_back(1e3 * m.gen_s / static_cast<double>(cfg.gen));
        }
        double mean = 0, ss = 0;
        for (double v : ms) mean += v;
        mean /= static_cast<double>(ms.size());
        for (double v : ms) ss += (v - mean) * (v - mean);
        r.measured_ms = mean;
        r.measured_sd = ms.size() > 1 ? std::sqrt(ss / static_cast<double>(ms.size() - 1)) : 0;
      }
      rows.push_back(r);
    }
  }
  return rows;
}

std::string format_roofline(const RooflineMachine& m, const std::vector<RooflineRow>& rows,
                            const std::string& format) {
  if (format == "json") {
    nlohmann::json bw = nlohmann::json::array();
    for (const auto& [bytes, gbs] : m.bandwidth)
      bw.push_back({{"bytes", bytes}, {"gb_per_s", gbs}});
    nlohmann::json doc = {{"machine", m.description},
                          {"kernel", m.kernel},
                          {"read_bandwidth", bw},
                          {"dram_gb_per_s", m.dram_gbs},
                          {"peak_fma_gflops", m.peak_gflops},
                          {"matvec_cache_gflops", m.matvec_cache_gflops},
                          {"matvec_dram_gflops", m.matvec_dram_gflops}};
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"model", r.model},
                          {"arch", r.arch},
                          {"context", r.context},
                          {"weight_bytes", r.cost.weight_bytes},
                          {"state_bytes", r.cost.state_bytes},
                          {"flops", r.cost.flops},
                          {"bandwidth_gb_per_s", r.bandwidth_gbs},
                          {"floor_ms", r.floor.ms()},
                          {"floor_bound", r.floor.bound()},
                          {"bytes_floor_ms", r.floor.bytes_ms},
                          {"flops_floor_ms", r.floor.flops_ms},
                          {"dram_floor_ms", r.dram_floor.ms()}};
      if (r.measured_ms > 0)
        j.update({{"ms_per_token", r.measured_ms},
                  {"sd", r.measured_sd},
                  {"x_floor", r.ratio()},
                  {"x_dram_floor", r.measured_ms / r.dram_floor.ms()}});
      if (!r.note.empty()) j["note"] = r.note;
      a.push_back(j);
    }
    doc["models"] = a;
    return doc.dump(1) + "\n";
  }
  SEQLAB_CHECK(format == "md", "--format must be md or json, got '{}'", format);
  std::string s = fmt::format(
      "seqlab bench roofline: {}; fast kernel {}, one thread\n\n"
      "| measurement | value |\n|---|---:|\n",
      m.description, m.kernel);
  for (const auto& [bytes, gbs] : m.bandwidth)
    s += fmt::format("| read bandwidth, {} buffer | {:.1f} GB/s |\n", size_name(bytes), gbs);
  s += fmt::format("| peak FMA throughput (registers) | {:.1f} GFLOP/s |\n", m.peak_gflops);
  s += fmt::format("| infer::matvec, 512 × 512 (1 MiB, cache) | {:.1f} GFLOP/s |\n",
                   m.matvec_cache_gflops);
  s += fmt::format("| infer::matvec, 8192 × 4096 (128 MiB, DRAM) | {:.1f} GFLOP/s |\n",
                   m.matvec_dram_gflops);
  if (rows.empty()) return s;
  s += "\nfloor = max(bytes / read bandwidth at the working set's size, FLOPs / peak FMA); "
       "one generated token after the context\n\n";
  s += "| model | arch | context | weight MB | state MB | MFLOP | GB/s at size | floor ms | bound "
       "| DRAM floor ms | fast ms/token | x floor |\n";
  s += "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n";
  for (const auto& r : rows) {
    s += fmt::format("| {} | {} | {} | {:.2f} | {:.3f} | {:.2f} | {:.1f} | {:.4f} | {} | {:.4f} | ",
                     r.model, r.arch, r.context, r.cost.weight_bytes / 1e6,
                     r.cost.state_bytes / 1e6, r.cost.flops / 1e6, r.bandwidth_gbs, r.floor.ms(),
                     r.floor.bound(), r.dram_floor.ms());
    if (r.measured_ms > 0)
      s += fmt::format("{:.4f} ± {:.4f} | {:.2f}× |\n", r.measured_ms, r.measured_sd, r.ratio());
    else
      s += fmt::format("{} | — |\n", r.note.empty() ? "—" : r.note);
  }
  return s;
}

}  // namespace seqlab::infer
