#include "seqlab/core/blas_check.h"

#include "seqlab/core/log.h"

#include <torch/torch.h>

#include <fstream>

namespace seqlab {

BlasInfo detect_blas() {
  // Force LibTorch to resolve its BLAS symbols (a tiny product) before reading the maps.
  {
    torch::NoGradGuard ng;
    auto a = torch::ones({8, 8});
    (void)torch::mm(a, a);
  }
  BlasInfo info{"", false};
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const bool is_blas = path.find("blas") != std::string::npos ||
                         path.find("libmkl") != std::string::npos ||
                         path.find("blis") != std::string::npos;
    if (!is_blas) continue;
    info.library = path;
    if (path.find("openblas") != std::string::npos || path.find("mkl") != std::string::npos ||
        path.find("blis") != std::string::npos) {
      info.optimized = true;
      break;
    }
  }
  return info;
}

void warn_if_reference_blas() {
  const auto info = detect_blas();
  if (!info.optimized && !info.library.empty())
    log_warn(
        "reference BLAS is active ({}): matrix products run ~13x slower; install "
        "libopenblas0-pthread (scripts/setup.sh does)",
        info.library);
}

}  // namespace seqlab
