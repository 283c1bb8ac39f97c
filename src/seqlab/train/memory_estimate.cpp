#include "seqlab/train/memory_estimate.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/registry.h"

#include <fstream>
#include <sstream>

namespace seqlab {

MemoryEstimate estimate_training_memory(const ModelConfig& m, int64_t batch, int64_t length,
                                        bool frozen_base) {
  const double B = static_cast<double>(batch), T = static_cast<double>(length);
  const double D = static_cast<double>(m.mixer.d_model), H = static_cast<double>(m.mixer.n_head);
  const double V = static_cast<double>(std::max<int64_t>(m.vocab_size, m.n_classes));
  // The mixer's own figures come from its registry entry (mixers/registry.h).
  const ArchMemory& mem = arch_entry(m.mixer.arch).memory;
  const double params =
      static_cast<double>(m.n_layer) * (mem.matrices + 2.0 * static_cast<double>(m.mlp_ratio)) * D *
          D +
      (static_cast<double>(m.vocab_size) + V + static_cast<double>(m.mixer.max_len)) * D;
  MemoryEstimate e;
  e.weights = (frozen_base ? 4.0 : 16.0) * params;
  double per_block = (20.0 + 3.0 * static_cast<double>(m.mlp_ratio)) * B * T * D;
  if (mem.score_floats) per_block += B * H * T * mem.score_floats(m.mixer, length);
  const double logits = m.head == "classify" ? 3.0 * B * V : 3.0 * B * T * V;
  e.activations = 4.0 * (per_block * static_cast<double>(m.n_layer) + B * T * D + logits);
  return e;
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
