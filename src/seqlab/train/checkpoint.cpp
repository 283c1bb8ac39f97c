// The trainer's resume point: writing and reading train_state.safetensors, cutting metrics.jsonl
// back to a checkpoint's step, and handing rank 0's start point to the other ranks; see
// checkpoint.h and docs/DESIGN.md, "Training and exact resume".
#include "seqlab/train/checkpoint.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/optim.h"
#include "seqlab/train/swag.h"
#include "seqlab/train/trainer.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace seqlab::detail {

namespace fs = std::filesystem;

torch::Tensor LoopState::to_tensor() const {
  return torch::tensor(
      {window_loss, static_cast<double>(window_n), static_cast<double>(bad_in_a_row),
       static_cast<double>(skipped), first_loss},
      torch::kDouble);
}

LoopState LoopState::from_tensor(const torch::Tensor& t, const std::string& source) {
  SEQLAB_CHECK(t.dim() == 1 && t.numel() == 5 && t.scalar_type() == torch::kDouble,
               "{}: 'trainer.loop' must hold 5 float64 values", source);
  auto a = t.accessor<double, 1>();
  // The counts come from a file: a NaN or out-of-range double would make the casts undefined.
  for (int i = 1; i <= 3; ++i)
    SEQLAB_CHECK(a[i] >= 0 && a[i] <= 9007199254740992.0 && a[i] == std::floor(a[i]),
                 "{}: 'trainer.loop' holds an invalid count {}", source, a[i]);
  LoopState l;
  l.window_loss = a[0];
  l.window_n = static_cast<int64_t>(a[1]);
  l.bad_in_a_row = static_cast<int64_t>(a[2]);
  l.skipped = static_cast<int64_t>(a[3]);
  l.first_loss = a[4];
  return l;
}

void save_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, int64_t step,
                     const LoopState& loop, const nlohmann::json& sections, const Swag* swag) {
  TensorMap t;
  if (swag) {
    // The SWAG moments are part of the resume point, and also written on their own for use.
    auto st = swag->to_tensors();
    t.insert(st.begin(), st.end());
    save_safetensors((fs::path(out) / kSwagFile).string(), st,
                     {{"seqlab_version", SEQLAB_VERSION}});
  }
  t["trainer.loop"] = loop.to_tensor();
  for (auto& [k, v] : model_tensors(model)) t["model." + k] = v;
  for (auto& [k, v] : opt.state()) t[k] = v;
  t["step"] = torch::tensor({step}, torch::kLong);
  // The resume point is this one file, written atomically; the user-facing model directory
  // (config.json + model.safetensors) follows.
  save_safetensors((fs::path(out) / kTrainStateFile).string(), t,
                   {{"seqlab_version", SEQLAB_VERSION}});
  save_model_dir(out, model, sections);
}

namespace {

// Keeps the lines of metrics.jsonl whose step is <= `step` (drops what a killed run wrote after
// its last checkpoint), so a resumed run's log has no duplicates.
void truncate_metrics(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::ostringstream kept;
  std::string line;
  while (std::getline(in, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("step", int64_t{0}) <= step) kept << line << "\n";
    } catch (const nlohmann::json::exception&) {
      // a torn last line from a killed run: drop it
    }
  }
  write_file_atomic(path, kept.str());
}

int64_t load_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, LoopState& loop,
                        Swag* swag) {
  const std::string path = (fs::path(out) / kTrainStateFile).string();
  auto file = load_safetensors(path);
  std::map<std::string, torch::Tensor> weights, optim, swag_tensors;
  for (auto& [k, v] : file.tensors) {
    if (k.rfind("model.", 0) == 0)
      weights[k.substr(6)] = v;
    else if (k.rfind("swag.", 0) == 0)
      swag_tensors[k] = v;
    else if (k != "step" && k != "trainer.loop")
      optim[k] = v;
  }
  load_model_tensors(model, weights, path);
  opt.load_state(optim, path);
  if (swag && !swag_tensors.empty()) *swag = Swag::from_tensors(swag_tensors, path);
  auto lp = file.tensors.find("trainer.loop");
  SEQLAB_CHECK(lp != file.tensors.end(), "{}: missing 'trainer.loop'", path);
  loop = LoopState::from_tensor(lp->second, path);
  auto it = file.tensors.find("step");
  SEQLAB_CHECK(it != file.tensors.end() && it->second.numel() == 1 &&
                   it->second.scalar_type() == torch::kLong,
               "{}: missing 'step' (one int64)", path);
  return it->second.item<int64_t>();
}

}  // namespace

int64_t resume_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, LoopState& loop,
                          Swag* swag, int64_t steps, const std::string& metrics_path) {
  const int64_t step = load_checkpoint(out, model, opt, loop, swag);
  SEQLAB_CHECK(step <= steps, "{}: checkpoint is at step {}, past --steps {}",
               (fs::path(out) / kTrainStateFile).string(), step, steps);
  truncate_metrics(metrics_path, step);
  return step;
}

void share_start_point(DataParallel& dp, SeqModelImpl& model, AdamW& opt, int64_t& start_step,
                       LoopState& loop) {
  std::vector<torch::Tensor> ts;
  for (auto& [k, v] : model_tensors(model)) ts.push_back(v);
  auto st = opt.state();
  for (auto& [k, v] : st) ts.push_back(v);
  auto where = torch::tensor({start_step}, torch::kLong);
  auto loop_t = loop.to_tensor();
  ts.push_back(where);
  ts.push_back(loop_t);
  dp.broadcast(ts);
  if (!dp.root()) {
    opt.load_state(std::map<std::string, torch::Tensor>(st.begin(), st.end()), "rank 0");
    start_step = where.item<int64_t>();
    loop = LoopState::from_tensor(loop_t, "rank 0");
  }
}

}  // namespace seqlab::detail
