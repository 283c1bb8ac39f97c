// What machine a result came from: the CPU (model name, family and model numbers) and the kernel
// set OpenBLAS chose for it. Training is deterministic on one machine but not across machines
// (docs/RESULTS.md: a slice rerun on another CPU matched 3 of 40 rows bit for bit), and OpenBLAS
// 0.3.21 picks its kernels by CPU (it runs Haswell kernels on a family-26 AMD EPYC it does not
// know), so each suite cell records these beside its results.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

struct MachineFacts {
  std::string cpu;          // /proc/cpuinfo "model name" ("" if unreadable)
  int cpu_family = -1;      // "cpu family", -1 if absent
  int cpu_model = -1;       // "model", -1 if absent
  int cores = 0;            // hardware threads
  std::string blas_core;    // openblas_get_corename(), "" when the BLAS is not OpenBLAS
  std::string blas_config;  // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."

  nlohmann::json to_json() const;
  // One line: "AMD EPYC (family 26, model 2), 2 cores, OpenBLAS core Haswell".
  std::string summary() const;
};

// Reads /proc/cpuinfo and asks OpenBLAS (looked up in the process, never linked by name).
MachineFacts machine_facts();

}  // namespace seqlab
