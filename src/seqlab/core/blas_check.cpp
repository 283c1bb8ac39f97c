#include "seqlab/core/blas_check.h"

#include "seqlab/core/log.h"

#include <torch/torch.h>

#include <dlfcn.h>

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

namespace {

// OpenBLAS's thread-count functions, looked up in the process: the libblas LibTorch loaded may be
// OpenBLAS, BLIS or the reference one, so nothing here links against OpenBLAS by name.
template <class F>
F openblas_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void set_compute_threads(int n) {
  torch::set_num_threads(n);
  if (auto set = openblas_function<void (*)(int)>("openblas_set_num_threads")) set(n);
}

int openblas_threads() {
  auto get = openblas_function<int (*)()>("openblas_get_num_threads");
  return get ? get() : -1;
}

}  // namespace seqlab
