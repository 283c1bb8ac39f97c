// The trainer's resume point (docs/DESIGN.md, "Training and exact resume"): train_state.safetensors
// holds the step, the weights (model.*), the AdamW moments (adam.*), the SWAG moments (swag.*)
// and the trainer's running values (trainer.loop) in one atomically written file, so a run killed
// at any moment resumes bitwise where its last checkpoint left it, and writes the same
// metrics.jsonl lines as an uninterrupted run.
//
// Internal to train/: shared by trainer.cpp and checkpoint.cpp only; the public entry point is
// train_model (train/trainer.h).
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace seqlab {

class AdamW;
class DataParallel;
class SeqModelImpl;
class Swag;

namespace detail {

// The trainer's own running values, saved with each checkpoint so that a resumed run writes the
// same metrics.jsonl as an uninterrupted one.
struct LoopState {
  double window_loss = 0;    // sum of losses since the last log line
  int64_t window_n = 0;      // steps in that sum
  int64_t bad_in_a_row = 0;  // consecutive non-finite losses
  int64_t skipped = 0;       // non-finite losses in all
  double first_loss = -1;    // mean loss of the first log window (-1 until known)

  // As 5 float64 values: [window_loss, window_n, bad_in_a_row, skipped, first_loss].
  torch::Tensor to_tensor() const;
  // Checks the shape and the counts (they come from a file or another rank); errors name `source`.
  static LoopState from_tensor(const torch::Tensor& t, const std::string& source);
};

// Writes the resume point of step `step` into `out` (train_state.safetensors, atomically; with
// SWAG also swag.safetensors on its own), then the model directory (config.json with `sections`
// + model.safetensors).
void save_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, int64_t step,
                     const LoopState& loop, const nlohmann::json& sections, const Swag* swag);

// Resumes from `out`'s train_state.safetensors: loads the weights, the optimizer moments, the loop
// values and (when swag is non-null and the file has them) the SWAG moments, refuses a checkpoint
// past step `steps`, and cuts `metrics_path` back to the checkpoint's step (dropping what a killed
// run wrote after it). Returns that step. Errors name the file.
int64_t resume_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, LoopState& loop,
                          Swag* swag, int64_t steps, const std::string& metrics_path);

// Data parallel (train/distributed.h): every rank gets rank 0's weights, optimizer moments, start
// step and loop values, i.e. what a checkpoint holds, so all ranks start from the same point.
// Collective: every rank calls it.
void share_start_point(DataParallel& dp, SeqModelImpl& model, AdamW& opt, int64_t& start_step,
                       LoopState& loop);

}  // namespace detail
}  // namespace seqlab
