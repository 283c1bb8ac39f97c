// BLAS facts and settings. Detects reference BLAS: without libopenblas0-pthread, Debian's
// LibTorch falls back to the reference BLAS and matrix products run about 13x slower (4.6 against
// 60 GFLOP/s measured). Sets OpenBLAS's thread count along with LibTorch's.
#pragma once

#include <string>

namespace seqlab {

struct BlasInfo {
  std::string library;  // the libblas the process mapped, as a path ("" if none found)
  bool optimized;       // OpenBLAS, BLIS or MKL
};

// Reads /proc/self/maps for the BLAS library LibTorch resolved to.
BlasInfo detect_blas();

// Logs a warning on stderr when reference BLAS is active. Cheap; called once at CLI start-up.
void warn_if_reference_blas();

// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its thread count too. LibTorch
// does not pass its count on to the libblas Debian links it against, so `--threads 1` otherwise
// still leaves OpenBLAS one thread per core, which busy-waits for work between products; beside
// other busy processes that spinning takes most of the core (measured in docs/RESULTS.md).
void set_compute_threads(int n);

// OpenBLAS's current thread count, or -1 when the BLAS in use is not OpenBLAS.
int openblas_threads();

}  // namespace seqlab
