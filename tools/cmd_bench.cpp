// seqlab bench decode: prefill and generation speed and peak memory of the fast decoder and of
// SeqModel::step, side by side (src/seqlab/infer/bench.h); seqlab bench roofline: this machine's
// bandwidth and FMA ceiling, and the fast decoder's floor per token (src/seqlab/infer/roofline.h).
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/own_memory.h"
#include "seqlab/infer/bench.h"
#include "seqlab/infer/roofline.h"
#include "seqlab/train/bench_train.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

namespace seqlab::cli {

namespace {

struct BenchDecodeArgs {
  infer::DecodeBenchConfig cfg;
  std::string format = "md";
  bool quiet = false;
};

struct DecodeRunArgs {
  std::string model, engine, weights = "f32";
  int64_t context = 0, gen = 0, batch = 1, decoder_threads = 1;
  uint64_t seed = 0;
  Common common;
};

int run_bench_decode(BenchDecodeArgs& a) {
  if (a.quiet) log_level() = 0;
  warn_if_reference_blas();
  SEQLAB_CHECK(a.format == "md" || a.format == "csv" || a.format == "json",
               "--format must be md, csv or json, got '{}'", a.format);
  a.cfg.validate();
  a.cfg.worker_exe = std::filesystem::read_symlink("/proc/self/exe").string();
  log_info("bench decode on {}", infer::machine_description());
  auto rows = infer::run_decode_bench(a.cfg, [](const std::string& m) { log_info("{}", m); });
  std::cout << infer::format_decode_bench(rows, a.format, a.cfg) << std::flush;
  return 0;
}

int run_decode_worker(DecodeRunArgs& a) {
  a.common.apply();
  auto m = infer::measure_decode(a.model, a.engine, a.context, a.gen, a.seed, a.batch,
                                 a.decoder_threads, parse_weight_format(a.weights));
  std::cout << nlohmann::json{{"prefill_s", m.prefill_s},
                              {"gen_s", m.gen_s},
                              {"state_bytes", m.state_bytes},
                              {"peak_rss_kb", own_peak_rss_kb()}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

void add_bench_commands(CLI::App& app, Actions& actions) {
  auto* bench = app.add_subcommand("bench",
                                   "benchmarks: `seqlab bench decode`, `seqlab bench roofline`, "
                                   "`seqlab bench train`");
  bench->require_subcommand(1);

  auto ba = std::make_shared<BenchDecodeArgs>();
  auto* dec = bench->add_subcommand(
      "decode",
      "prefill and generation tokens/s and peak memory per model × engine × context, each "
      "measurement in a child process; both engines side by side");
  dec->add_option("--model", ba->cfg.models, "model directories, comma-separated")
      ->required()
      ->delimiter(',');
  dec->add_option("--contexts", ba->cfg.contexts,
                  "context lengths (prefill tokens), comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  dec->add_option("--gen", ba->cfg.gen, "greedy tokens generated after the context")
      ->capture_default_str();
  dec->add_option("--reps", ba->cfg.reps, "repetitions (mean ± sd)")->capture_default_str();
  dec->add_option("--engines", ba->cfg.engines,
                  "fast, torch or both, comma-separated; fast-rows = the fast engine with its "
                  "prefill as one matrix-vector product per token (no GEMM tiles), to compare")
      ->delimiter(',')
      ->capture_default_str();
  dec->add_option("-o,--format", ba->format, "md, csv or json")->capture_default_str();
  dec->add_option("--threads", ba->cfg.threads, "LibTorch threads of the torch engine")
      ->capture_default_str();
  dec->add_option("--batch", ba->cfg.batches,
                  "batch sizes, comma-separated: B sequences generated together by the fast "
                  "engine's batched step (tokens/s summed over them)")
      ->delimiter(',')
      ->capture_default_str();
  dec->add_option("--weights", ba->cfg.weights,
                  "weight formats of the fast engines, comma-separated: f32, bf16, int8 "
                  "(int8: blocks of 32 with a scale each; the torch engine runs f32 only)")
      ->delimiter(',')
      ->capture_default_str();
  dec->add_option("--decoder-threads", ba->cfg.decoder_threads,
                  "threads of the fast decoder's products (infer::set_threads)")
      ->capture_default_str();
  dec->add_option("--seed", ba->cfg.seed, "seed of the random context tokens")
      ->capture_default_str();
  dec->add_flag("-q,--quiet", ba->quiet, "no progress lines on stderr");
  actions.push_back({dec, [ba] { return run_bench_decode(*ba); }});

  // roofline: the machine's ceilings and, per model, the fast decoder's floor per token.
  struct RooflineArgs {
    infer::RooflineConfig cfg;
    std::string format = "md";
    bool quiet = false;
  };
  auto ra_ = std::make_shared<RooflineArgs>();
  auto* rf = bench->add_subcommand(
      "roofline",
      "read bandwidth (cache sizes and DRAM), peak FMA and matvec GFLOP/s on one core, and per "
      "model the floor per generated token, max(bytes / bandwidth, FLOPs / peak), beside the "
      "fast decoder's measured ms/token");
  rf->add_option("--model", ra_->cfg.models, "model directories, comma-separated (optional)")
      ->delimiter(',');
  rf->add_option("--contexts", ra_->cfg.contexts, "context lengths, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  rf->add_option("--gen", ra_->cfg.gen,
                 "greedy tokens timed after the context (0 = the floor only)")
      ->capture_default_str();
  rf->add_option("--reps", ra_->cfg.reps, "repetitions of the timing (mean ± sd)")
      ->capture_default_str();
  rf->add_option("--dram-mb", ra_->cfg.dram_mb, "buffer of the DRAM bandwidth measurement, MiB")
      ->capture_default_str();
  rf->add_option("-o,--format", ra_->format, "md or json")->capture_default_str();
  rf->add_flag("-q,--quiet", ra_->quiet, "no progress lines on stderr");
  actions.push_back({rf, [ra_] {
                       if (ra_->quiet) log_level() = 0;
                       SEQLAB_CHECK(ra_->format == "md" || ra_->format == "json",
                                    "--format must be md or json, got '{}'", ra_->format);
                       ra_->cfg.validate();
                       log_info("bench roofline on {}", infer::machine_description());
                       const auto machine = infer::measure_machine(ra_->cfg);
                       const auto rows = infer::run_roofline(ra_->cfg, machine);
                       std::cout << infer::format_roofline(machine, rows, ra_->format)
                                 << std::flush;
                       return 0;
                     }});

  // train: training throughput per architecture; linear attention quadratic vs chunked.
  struct TrainArgs {
    TrainBenchConfig cfg;
    std::string format = "md";
    bool quiet = false;
  };
  auto ta = std::make_shared<TrainArgs>();
  auto* tr = bench->add_subcommand(
      "train",
      "training tokens/s per architecture (forward, backward, AdamW), and linear attention's "
      "quadratic vs chunked forms at growing T, side by side in one process");
  tr->add_option("--archs", ta->cfg.archs, "architectures, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  tr->add_option("--d-model", ta->cfg.d_model, "model width")->capture_default_str();
  tr->add_option("--n-layer", ta->cfg.n_layer, "blocks")->capture_default_str();
  tr->add_option("--batch", ta->cfg.batch, "sequences per step")->capture_default_str();
  tr->add_option("--length", ta->cfg.length, "tokens per sequence (T)")->capture_default_str();
  tr->add_option("--form-lengths", ta->cfg.form_lengths,
                 "T of the quadratic vs chunked comparison, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  tr->add_option("--feature-map", ta->cfg.feature_map, "feature map of that comparison")
      ->capture_default_str();
  tr->add_option("--steps", ta->cfg.steps, "steps per repetition")->capture_default_str();
  tr->add_option("--reps", ta->cfg.reps, "repetitions (mean ± sd)")->capture_default_str();
  tr->add_option("--threads", ta->cfg.threads, "LibTorch threads")->capture_default_str();
  tr->add_option("-o,--format", ta->format, "md, csv or json")->capture_default_str();
  tr->add_flag("-q,--quiet", ta->quiet, "no progress lines on stderr");
  actions.push_back({tr, [ta] {
                       if (ta->quiet) log_level() = 0;
                       warn_if_reference_blas();
                       SEQLAB_CHECK(
                           ta->format == "md" || ta->format == "csv" || ta->format == "json",
                           "--format must be md, csv or json, got '{}'", ta->format);
                       auto rows = run_train_bench(ta->cfg);
                       std::cout << format_train_bench(rows, ta->format) << std::flush;
                       return 0;
                     }});

  // decode-run: one measurement in a child process (started by `bench decode`).
  auto ra = std::make_shared<DecodeRunArgs>();
  auto* run = bench->add_subcommand("decode-run", "")->group("");  // hidden from --help
  run->add_option("--model", ra->model)->required();
  run->add_option("--engine", ra->engine)->required();
  run->add_option("--context", ra->context)->required();
  run->add_option("--gen", ra->gen)->required();
  run->add_option("--seed", ra->seed);
  run->add_option("--batch", ra->batch);
  run->add_option("--decoder-threads", ra->decoder_threads);
  run->add_option("--weights", ra->weights);
  ra->common.add(run);
  actions.push_back({run, [ra] { return run_decode_worker(*ra); }});
}

}  // namespace seqlab::cli
