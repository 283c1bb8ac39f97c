#include "seqlab/core/blas_check.h"
#include "seqlab/core/machine.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(Machine, SummaryNamesTheCpuAndTheBlasCore) {
  MachineFacts m;
  m.cpu = "AMD EPYC";
  m.cpu_family = 26;
  m.cpu_model = 2;
  m.cores = 2;
  m.blas_core = "Haswell";
  EXPECT_EQ(m.summary(), "AMD EPYC (family 26, model 2), 2 cores, OpenBLAS core Haswell");
  m.blas_core.clear();
  m.cpu_family = -1;
  m.cpu.clear();
  EXPECT_EQ(m.summary(), "unknown CPU, 2 cores");
  const auto j = m.to_json();
  EXPECT_EQ(j.at("cores"), 2);
  EXPECT_EQ(j.at("cpu_family"), -1);
  EXPECT_EQ(j.at("blas_core"), "");
}

// On this process: Linux x86 has a model name and family; OpenBLAS (scripts/setup.sh installs it)
// names its core exactly when its thread-count function is there too.
TEST(Machine, ReadsThisMachine) {
  (void)detect_blas();  // makes LibTorch resolve its BLAS first
  const auto m = machine_facts();
  EXPECT_GE(m.cores, 1);
#if defined(__linux__) && defined(__x86_64__)
  EXPECT_FALSE(m.cpu.empty());
  EXPECT_GE(m.cpu_family, 0);
  EXPECT_GE(m.cpu_model, 0);
#endif
  EXPECT_EQ(!m.blas_core.empty(), openblas_threads() >= 0) << m.summary();
  if (!m.blas_core.empty()) EXPECT_NE(m.blas_config.find("OpenBLAS"), std::string::npos);
}
