// What the fused scans share (selective_scan.h, linear_scan.h, lstm_scan.h, gru_scan.h,
// elman_scan.h).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace seqlab {

// SEQLAB_SCAN=reference, or a ReferenceScans alive on this thread: every fused scan runs its
// per-token reference instead (the variable is read once; bench/fused_scan.sh times both).
bool scan_reference_requested();

// While alive, the fused scans on this thread run their references. The fused nodes have no
// double backward: a graph that will be differentiated twice (create_graph, as the DEQ's Jacobian
// term does, model/deq.cpp) must be built under one.
class ReferenceScans {
 public:
  ReferenceScans();
  ~ReferenceScans();
  ReferenceScans(const ReferenceScans&) = delete;
  ReferenceScans& operator=(const ReferenceScans&) = delete;

 private:
  bool previous_;
};

// The matrix recurrences' inputs: checks xi [B,T,G*D], w_hh [G*D,D] and b_hh [G*D] (throws
// naming `scan`), and says whether the fused loop runs: CPU float tensors, T > 0 and no
// SEQLAB_SCAN=reference.
bool matrix_scan_fused(const torch::Tensor& xi, const torch::Tensor& w_hh,
                       const torch::Tensor& b_hh, int64_t gates, const char* scan);

// The per-token reference loop of a one-tensor recurrence: h_t = step(xi_t, h_{t-1}) from h = 0
// over xi [B,T,.], every h_t [B,D] stacked: [B,T,D] (unbind, not select: see mixer.h).
template <class Step>
torch::Tensor reference_scan(const torch::Tensor& xi, int64_t D, Step&& step) {
  auto h = torch::zeros({xi.size(0), D}, xi.options());
  std::vector<torch::Tensor> hs;
  hs.reserve(xi.size(1));
  for (const auto& xi_t : xi.unbind(1)) {
    h = step(xi_t, h);  // [B,D]
    hs.push_back(h);
  }
  return hs.empty() ? torch::zeros({xi.size(0), 0, D}, xi.options()) : torch::stack(hs, 1);
}

}  // namespace seqlab
