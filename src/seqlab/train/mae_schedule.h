// Training schedules of a mixture of attentive experts (mixers/mae.h; Peng et al. 2020, sec. 3).
//
//   joint     gate and experts are updated together by every step (the paper's ablation).
//   bcd:G,E   block coordinate descent: G steps that update only the gates (every parameter named
//             "*.gate.*"), then E steps that update only the rest (the experts: attention, MLPs,
//             embeddings), repeated from step 0. The paper alternates the two blocks so that the
//             gate cannot collapse onto one expert before the experts have differentiated.
//
// A step's phase is a function of the step number alone, so a resumed run continues the same
// schedule. The parameters of the inactive block get no gradient that step: AdamW leaves them and
// their moments untouched, and gradient clipping measures the active block only.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace seqlab {

class MaeSchedule {
 public:
  enum class Phase { joint, gates, experts };

  // Parses "joint" or "bcd:G,E" (G, E >= 1); throws seqlab::Error otherwise.
  static MaeSchedule parse(const std::string& spec);

  bool joint() const { return joint_; }
  // The block step `step` (0-based) updates.
  Phase phase(int64_t step) const;
  // Drops the gradients of the block that does not train at `step` (no-op when joint).
  void mask_gradients(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                      int64_t step) const;

  // Whether a parameter name belongs to an MAE gate.
  static bool is_gate(const std::string& name);

 private:
  bool joint_ = true;
  int64_t gate_steps_ = 0, expert_steps_ = 0;
};

}  // namespace seqlab
