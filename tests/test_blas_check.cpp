#include "seqlab/core/blas_check.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

using namespace seqlab;

// scripts/setup.sh installs libopenblas0-pthread; without it matrix products run ~13x slower.
// This test fails on a machine where LibTorch resolved to the reference BLAS.
TEST(BlasCheck, AnOptimizedBlasIsActive) {
  auto info = detect_blas();
  EXPECT_FALSE(info.library.empty()) << "no BLAS library mapped";
  EXPECT_TRUE(info.optimized) << "reference BLAS in use: " << info.library;
}

// --threads must bound OpenBLAS too: LibTorch does not forward its own count to the libblas it
// is linked against, and OpenBLAS's idle threads busy-wait, taking most of a shared core.
TEST(BlasCheck, ComputeThreadsBoundOpenBlas) {
  const auto info = detect_blas();
  if (info.library.find("openblas") == std::string::npos)
    GTEST_SKIP() << "the BLAS in use is not OpenBLAS: " << info.library;
  set_compute_threads(1);
  EXPECT_EQ(torch::get_num_threads(), 1);
  EXPECT_EQ(openblas_threads(), 1);
  // Raising it again is allowed (OpenBLAS caps it at the threads it started with, >= 1).
  set_compute_threads(2);
  EXPECT_EQ(torch::get_num_threads(), 2);
  EXPECT_GE(openblas_threads(), 1);
  set_compute_threads(1);
  EXPECT_EQ(openblas_threads(), 1);
}

TEST(BlasCheck, OpenBlasThreadsIsMinusOneOnlyWithoutOpenBlas) {
  const bool openblas = detect_blas().library.find("openblas") != std::string::npos;
  EXPECT_EQ(openblas_threads() >= 1, openblas);
}
