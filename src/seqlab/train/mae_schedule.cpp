#include "seqlab/train/mae_schedule.h"

#include "seqlab/core/error.h"

namespace seqlab {

namespace {
// A whole positive integer, or -1.
int64_t parse_count(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}
}  // namespace

MaeSchedule MaeSchedule::parse(const std::string& spec) {
  MaeSchedule s;
  if (spec == "joint") return s;
  const std::string prefix = "bcd:";
  const auto comma = spec.find(',');
  SEQLAB_CHECK(spec.rfind(prefix, 0) == 0 && comma != std::string::npos,
               "--mae-schedule must be joint or bcd:G,E (e.g. bcd:1,1), got '{}'", spec);
  const int64_t g = parse_count(spec.substr(prefix.size(), comma - prefix.size()));
  const int64_t e = parse_count(spec.substr(comma + 1));
  SEQLAB_CHECK(g >= 1 && e >= 1,
               "--mae-schedule bcd:G,E needs whole numbers G, E >= 1 of steps, got '{}'", spec);
  s.joint_ = false;
  s.gate_steps_ = g;
  s.expert_steps_ = e;
  return s;
}

MaeSchedule::Phase MaeSchedule::phase(int64_t step) const {
  if (joint_) return Phase::joint;
  return step % (gate_steps_ + expert_steps_) < gate_steps_ ? Phase::gates : Phase::experts;
}

bool MaeSchedule::is_gate(const std::string& name) {
  return name.rfind("gate.", 0) == 0 || name.find(".gate.") != std::string::npos;
}

void MaeSchedule::mask_gradients(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                 int64_t step) const {
  const Phase p = phase(step);
  if (p == Phase::joint) return;
  for (const auto& [name, param] : named)
    if (is_gate(name) != (p == Phase::gates)) param.mutable_grad() = torch::Tensor();
}

}  // namespace seqlab
