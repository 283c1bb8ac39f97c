// The fast decoder's roofline: how fast one generated token could possibly be on this machine,
// and how far the decoder is from it.
//
// A token of batch-1 decoding reads every weight once and does about two FLOPs per weight read
// (one multiply-add), so it is bound either by moving the bytes or by doing the FLOPs:
//
//   floor per token = max( (weight bytes + state bytes) / measured read bandwidth,
//                          FLOPs / measured peak FMA throughput )
//
// on one core (the decoder's default). The bandwidth is measured by streaming reads over a buffer
// of the working set's own size (weights + state, repeated, so a model that fits in the last-level
// cache is measured at cache speed, as it runs) and, for comparison, over a buffer far larger than
// the cache (DRAM). The FLOP rate is measured with independent AVX2 FMAs in registers (the
// machine's compute ceiling), beside infer::matvec's own GFLOP/s on cache-resident and DRAM-sized
// matrices. Counting rules (token_cost): see the struct.
#pragma once

#include "seqlab/model/model.h"

#include "seqlab/core/quant.h"

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab::infer {

// The work of one generated token at position p (p tokens before it), fp32, as the fast decoder
// does it (logits computed):
//   weight_bytes  4 × every parameter and buffer the token reads: every tensor of the model once,
//                 except the token embedding (one row of D; all of it when tied, as the head) and
//                 learned positions (one row of D).
//   state_bytes   4 × the recurrent state the token reads: softmax attention's keys and values of
//                 p + 1 tokens (2 (p+1) G Dh per layer, G kv heads: D without grouped-query
//                 attention); any other mixer's whole state (its SeqModel::init_state(1) floating
//                 tensors). RoPE's table row (R floats) is left out.
//   flops         2 × the multiply-adds of the matrix-vector products (every tensor of two or more
//                 dimensions: numel, so a 2-D bias such as t2r's b [H,F] is counted too, a
//                 small over-count; the head V × D; the embedding rows none; the MLP's I × D
//                 matrices, three with SwiGLU) plus softmax attention's 4 (p+1) D per layer (q·k
//                 and p·v, every query head) or 4 per state float for any other mixer (update
//                 and read-out). Elementwise work (norms, activations, RoPE, biases) is left out.
struct TokenCost {
  int64_t weight_bytes = 0, state_bytes = 0, flops = 0;
  int64_t bytes() const { return weight_bytes + state_bytes; }
};
// `format`: the 2-D matrices and the tied head count at that format's bytes (core/quant.h
// weight_bytes; 2-D tensors the fast decoder keeps in fp32, such as feature maps' or RNN cells',
// are counted narrow too: a small under-count).
TokenCost token_cost(SeqModelImpl& model, int64_t p, WeightFormat format = WeightFormat::f32);

// Streaming read bandwidth over a buffer of `bytes` (rounded up to 64 bytes), one thread, in
// GB/s (1e9 bytes/s): the best of `reps` timed runs of at least min_seconds each. Many short runs,
// because on a shared machine the best short window is the one nobody else's thread interrupted.
double read_bandwidth_gbs(int64_t bytes, int reps = 20, double min_seconds = 0.003);
// FLOP/s ceiling of one core in GFLOP/s: independent FMAs in registers (AVX2 when the CPU has
// it, else scalar multiply-adds), best of `reps`.
double peak_fma_gflops(int reps = 20);
// infer::matvec on a rows × cols matrix with the active kernel and threads, in GFLOP/s (2 rows
// cols per product), best of `reps`.
double matvec_gflops(int64_t rows, int64_t cols, int reps = 20);

// The floor per token, in milliseconds, and which side binds.
struct Floor {
  double bytes_ms = 0, flops_ms = 0;
  double ms() const { return bytes_ms > flops_ms ? bytes_ms : flops_ms; }
  const char* bound() const { return bytes_ms >= flops_ms ? "bytes" : "flops"; }
};
Floor floor_of(const TokenCost& c, double bandwidth_gbs, double peak_gflops);

// `seqlab bench roofline`: the machine's numbers and, per model and context, the cost, the floor
// and (when gen > 0) the fast decoder's measured generation ms/token and its ratio to the floor.
struct RooflineConfig {
  std::vector<std::string> models;  // may be empty: the machine's numbers only
  std::vector<int64_t> contexts = {128};
  int64_t gen = 256;  // generated tokens timed per (model, context); 0 = no measurement
  int64_t reps = 3;
  int64_t dram_mb = 256;  // buffer of the DRAM bandwidth measurement
  void validate() const;  // seqlab::Error naming the flag of a bad value
};

struct RooflineMachine {
  std::string description;                            // CPU, cores, load average
  std::string kernel;                                 // avx2+fma | scalar
  std::vector<std::pair<int64_t, double>> bandwidth;  // (buffer bytes, GB/s), growing sizes
  double dram_gbs = 0, peak_gflops = 0, matvec_cache_gflops = 0, matvec_dram_gflops = 0;
};
RooflineMachine measure_machine(const RooflineConfig& cfg);

struct RooflineRow {
  std::string model, arch, note;  // note: why nothing was measured
  int64_t context = 0;
  TokenCost cost;
  double bandwidth_gbs = 0;                 // measured at the working set's size
  Floor floor, dram_floor;                  // with that bandwidth; with DRAM's
  double measured_ms = 0, measured_sd = 0;  // fast engine, tg ms/token (0 = not measured)
  double ratio() const { return measured_ms > 0 ? measured_ms / floor.ms() : 0; }
};
std::vector<RooflineRow> run_roofline(const RooflineConfig& cfg, const RooflineMachine& machine);

// md (the machine's numbers, then one line per model × context) or json.
std::string format_roofline(const RooflineMachine& m, const std::vector<RooflineRow>& rows,
                            const std::string& format);

}  // namespace seqlab::infer
