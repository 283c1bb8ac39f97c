#include "seqlab/core/blas_check.h"

#include <gtest/gtest.h>

using namespace seqlab;

// scripts/setup.sh installs libopenblas0-pthread; without it matrix products run ~13x slower.
// This test fails on a machine where LibTorch resolved to the reference BLAS.
TEST(BlasCheck, AnOptimizedBlasIsActive) {
  auto info = detect_blas();
  EXPECT_FALSE(info.library.empty()) << "no BLAS library mapped";
  EXPECT_TRUE(info.optimized) << "reference BLAS in use: " << info.library;
}
