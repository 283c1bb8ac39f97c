#include "seqlab/train/memory_estimate.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/registry.h"

#include <fstream>
#include <sstream>

namespace seqlab {

namespace {

// D x D-equivalent matrices of one block's mixer and MLP, weighed by their real shapes: attention
// with n_kv_head < n_head projects k and v to G heads (2 G/H instead of 2 D x D matrices); an MLP
// of width I holds 2 I D (plain) or 3 I D (SwiGLU: gate, up, down) weights.
double block_matrices(const ModelConfig& m) {
  const double D = static_cast<double>(m.mixer.d_model);
  double mixer = arch_entry(m.mixer.arch).memory.matrices;
  if (m.mixer.kv_heads() < m.mixer.n_head)
    mixer -=
        2.0 * (1.0 - static_cast<double>(m.mixer.kv_heads()) / static_cast<double>(m.mixer.n_head));
  const double mlp = (m.mlp == "swiglu" ? 3.0 : 2.0) * static_cast<double>(m.mlp_width()) / D;
  return mixer + mlp;
}

}  // namespace

MemoryEstimate estimate_training_memory(const ModelConfig& m, int64_t batch, int64_t length,
                                        bool frozen_base) {
  const double B = static_cast<double>(batch), T = static_cast<double>(length);
  const double D = static_cast<double>(m.mixer.d_model), H = static_cast<double>(m.mixer.n_head);
  const double V = static_cast<double>(std::max<int64_t>(m.vocab_size, m.n_classes));
  const double I = static_cast<double>(m.mlp_width());
  // The mixer's own figures come from its registry entry (mixers/registry.h).
  const ArchMemory& mem = arch_entry(m.mixer.arch).memory;
  const double params =
      static_cast<double>(m.n_layer) * block_matrices(m) * D * D +
      (static_cast<double>(m.vocab_size) + V + static_cast<double>(m.mixer.max_len)) * D;
  MemoryEstimate e;
  e.weights = (frozen_base ? 4.0 : 16.0) * params;
  // The MLP keeps its hidden activations before and after the nonlinearity and their gradient
  // (3 I per position; SwiGLU's gate and up products one more).
  const double mlp_floats = (m.mlp == "swiglu" ? 4.0 : 3.0) * I;
  double per_block = (20.0 * D + mlp_floats) * B * T;
  if (mem.score_floats) per_block += B * H * T * mem.score_floats(m.mixer, length);
  const double logits = m.head == "classify" ? 3.0 * B * V : 3.0 * B * T * V;
  e.activations = 4.0 * (per_block * static_cast<double>(m.n_layer) + B * T * D + logits);
  return e;
}

double forward_flops_per_token(const ModelConfig& m, int64_t length) {
  const double D = static_cast<double>(m.mixer.d_model), L = static_cast<double>(m.n_layer);
  const double V = static_cast<double>(m.head == "lm" ? m.vocab_size : m.n_classes);
  // A multiply-add per weight of every block and of the head; attention that keeps a cache
  // (softmax) also scores and mixes all `length` positions: 2 products of D per position.
  double flops = 2.0 * (L * block_matrices(m) * D * D + V * D);
  if (arch_entry(m.mixer.arch).traits.kv_cache) flops += 4.0 * L * static_cast<double>(length) * D;
  return flops;
}

double machine_memory_bytes() {
  double total = 0;
  std::ifstream mi("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (mi >> key >> kb >> unit)
    if (key == "MemTotal:") {
      total = kb * 1024.0;
      break;
    }
  std::ifstream cg("/sys/fs/cgroup/memory.max");
  std::string v;
  if (cg >> v && v != "max") {
    const double lim = std::stod(v);
    if (lim > 0 && (total == 0 || lim < total)) total = lim;
  }
  return total;
}

void check_training_fits(const MemoryEstimate& e, double machine_bytes, int64_t processes) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  const double n = static_cast<double>(std::max<int64_t>(1, processes));
  SEQLAB_CHECK(machine_bytes <= 0 || n * e.total() <= machine_bytes,
               "this run needs an estimated {:.1f} GiB per training step ({:.1f} GiB weights, "
               "gradients and optimizer state; {:.1f} GiB activations){}, more than the {:.1f} "
               "GiB this machine has; lower --batch, --max-len, --d-model or --n-layer",
               n * e.total() / GiB, n * e.weights / GiB, n * e.activations / GiB,
               processes > 1 ? fmt::format(" for {} workers on this machine", processes) : "",
               machine_bytes / GiB);
}

}  // namespace seqlab
