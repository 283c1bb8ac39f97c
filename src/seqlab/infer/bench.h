// `seqlab bench decode`: decoding speed and memory per model × engine × context, the two engines
// measured side by side in one run (as llama.cpp's llama-bench separates them):
//
//   pp  prefill: consume the first C tokens of a seeded random token sequence, one at a time
//       (both engines are recurrent: SeqModel::step for torch, FastModel::prefill for fast)
//   tg  generation: then --gen more tokens, greedy, each sampled from the logits and consumed
//
// Every (model, engine, context, repetition) runs in a child process of its own (the seqlab
// binary re-executed with the hidden `bench decode-run`), so its peak resident memory is that
// child's alone and peaks do not accumulate across measurements. The child reports its own VmHWM
// (core/own_memory.h): wait4's ru_maxrss would start at this process's peak, which has loaded
// every model.
// The peak includes the LibTorch runtime and the model's LibTorch weights, which every child
// loads; the decoder state each engine holds is reported beside it.
// Model loading (and the fast engine's weight copy) is not timed. Fast generation rows also carry
// the roofline floor (infer/roofline.h) and the ratio to it; a model the fast engine does not
// support (infer::fast_support) has its fast rows skipped with the reason.
#pragma once

#include "seqlab/core/quant.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace seqlab::infer {

struct DecodeBenchConfig {
  std::vector<std::string> models;  // model directories
  std::vector<int64_t> contexts = {128, 1024, 4096, 16384};
  int64_t gen = 64;
  int64_t reps = 3;
  std::vector<std::string> engines = {"fast", "torch"};
  int64_t threads = 1;  // LibTorch intra-op threads of the torch engine
  // Sequences decoded together (FastModel::step_batch; batch > 1 runs the fast engines only) and
  // the fast decoder's threads (infer::set_threads).
  std::vector<int64_t> batches = {1};
  // Weight formats of the fast engines (core/quant.h names; the torch engine runs f32 only).
  std::vector<std::string> weights = {"f32"};
  int64_t decoder_threads = 1;
  uint64_t seed = 0;       // of the random prompt tokens
  std::string worker_exe;  // the seqlab binary, re-executed as `bench decode-run`
  // Throws seqlab::Error naming the flag of a bad value.
  void validate() const;
};

// One measurement, in this process.
struct DecodeMeasurement {
  double prefill_s = 0, gen_s = 0;
  int64_t state_bytes = 0;  // the engine's decoder state after the run
  int64_t peak_rss_kb = 0;  // the child's own VmHWM, as it reports it to the parent
};

// Loads the model (merging adapters), builds the engine and times prefill of `context` random
// tokens (drawn from mix_seed(seed, i)) and `gen` greedy tokens after them. With batch > 1 (fast
// engines only): `batch` sequences (row b's tokens from mix_seed(seed + b, i)), prefilled one after
// another, then generated together, one step_batch per token; the times are the whole batch's.
DecodeMeasurement measure_decode(const std::string& model_dir, const std::string& engine,
                                 int64_t context, int64_t gen, uint64_t seed, int64_t batch = 1,
                                 int64_t decoder_threads = 1,
                                 WeightFormat weights = WeightFormat::f32);

// One output row: a (model, engine, context, batch, test) cell (tokens_per_s: the whole batch's)
// over its repetitions.
struct DecodeBenchRow {
  std::string model, arch, engine, test;                 // test: pp | tg
  std::string weights = "f32";                           // the fast engine's weight format
  int64_t context = 0, batch = 1, tokens = 0, reps = 0;  // tokens: per sequence
  double tokens_per_s = 0, sd = 0, ms_per_token = 0, peak_rss_mb = 0, state_mb = 0;
  double fast_over_torch = 0;  // tg rows when both engines ran: fast tokens/s ÷ torch tokens/s
  // Fast tg rows: the roofline floor per generated token (infer/roofline.h: bytes over the read
  // bandwidth measured at the working set's size just before the cell, or FLOPs over peak FMA,
  // whichever is larger) and ms_per_token ÷ floor_ms.
  double floor_ms = 0, x_floor = 0;
  // Fast tg rows: the bytes of weights a token reads in this row's format (roofline.h
  // TokenCost::weight_bytes; json only).
  int64_t weight_bytes = 0;
  std::string note;  // set when the cell was skipped (nothing measured)
};

// Runs the grid (every measurement in a child process); progress(msg) is called before each.
std::vector<DecodeBenchRow> run_decode_bench(
    const DecodeBenchConfig& cfg, const std::function<void(const std::string&)>& progress);

// md (one line per model × context × engine, pp and tg side by side, preceded by a line naming the
// machine), csv (one line per row, header first) or json (an array of row objects).
std::string format_decode_bench(const std::vector<DecodeBenchRow>& rows, const std::string& format,
                                const DecodeBenchConfig& cfg);

// "CPU model name, N cores" from /proc/cpuinfo (empty parts left out).
std::string machine_description();

}  // namespace seqlab::infer
