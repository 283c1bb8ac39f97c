#include "seqlab/mixers/scan_common.h"

#include "seqlab/core/error.h"

#include <cstdlib>
#include <string>

namespace seqlab {

namespace {
thread_local bool t_reference_scans = false;
}  // namespace

bool scan_reference_requested() {
  static const bool env = [] {
    const char* v = std::getenv("SEQLAB_SCAN");
    return v && std::string(v) == "reference";
  }();
  return env || t_reference_scans;
}

ReferenceScans::ReferenceScans() : previous_(t_reference_scans) {
  t_reference_scans = true;
}

ReferenceScans::~ReferenceScans() {
  t_reference_scans = previous_;
}

bool matrix_scan_fused(const torch::Tensor& xi, const torch::Tensor& w_hh,
                       const torch::Tensor& b_hh, int64_t gates, const char* scan) {
  SEQLAB_CHECK(xi.dim() == 3 && w_hh.dim() == 2 && w_hh.size(0) == gates * w_hh.size(1) &&
                   xi.size(2) == w_hh.size(0) && b_hh.dim() == 1 && b_hh.size(0) == w_hh.size(0),
               "{}: expected xi [B,T,{}D], w_hh [{}D,D], b_hh [{}D]", scan, gates, gates, gates);
  const auto f = torch::kFloat;
  return xi.device().is_cpu() && xi.scalar_type() == f && w_hh.scalar_type() == f &&
         b_hh.scalar_type() == f && xi.size(1) > 0 && !scan_reference_requested();
}

}  // namespace seqlab
