// Detects reference BLAS. Without libopenblas0-pthread, Debian's LibTorch falls back to the
// reference BLAS and matrix products run about 13x slower (4.6 against 60 GFLOP/s measured).
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

}  // namespace seqlab
