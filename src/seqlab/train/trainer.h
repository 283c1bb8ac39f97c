// The trainer: AdamW with warmup + cosine, gradient clipping, periodic evaluation, metrics.jsonl,
// atomic checkpoints and exact resume.
//
// Exact resume: training batch s is sampled from mix_seed(seed, s), so the data cursor is the step
// number; train_state.safetensors holds the step, the weights and the optimizer moments in one
// atomically written file. A run interrupted and resumed ends with bitwise the same weights as an
// uninterrupted one (tests/test_trainer.cpp).
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"

#include <string>

namespace seqlab {

class DataParallel;
struct LoadedModel;

inline const char* kTrainStateFile = "train_state.safetensors";
inline const char* kMetricsFile = "metrics.jsonl";

struct TrainConfig {
  int64_t steps = 0, batch = 0, warmup = 0;
  double lr = 0, weight_decay = 0, min_lr_ratio = 0, clip = 0;
  uint64_t seed = 0;
  int64_t eval_every = 0, eval_size = 0, eval_tokens = 0, log_every = 0, checkpoint_every = 0;
  int64_t threads = 0;
  int64_t max_bad_steps = 0;  // stop after this many non-finite losses in a row
  int64_t swag_start = 0, swag_every = 0, swag_rank = 0;  // SWAG collection (train/swag.h)
  double swag_lr = 0;
  std::string mae_schedule;  // joint | bcd:G,E (train/mae_schedule.h)

  template <class V>
  void visit(V&& v) {
    v(steps, "steps", int64_t{1000}, "optimizer steps");
    v(batch, "batch", int64_t{32}, "sequences per batch");
    v(lr, "lr", 1e-3, "peak learning rate");
    v(warmup, "warmup", int64_t{50}, "linear warmup steps");
    v(min_lr_ratio, "min-lr-ratio", 0.1, "final learning rate of the cosine, as a fraction of lr");
    v(weight_decay, "weight-decay", 0.01, "AdamW weight decay (matrices only)");
    v(clip, "clip", 1.0, "clip the global gradient norm to this (0 = off)");
    v(seed, "seed", uint64_t{0}, "seed of initialisation and data");
    v(eval_every, "eval-every", int64_t{0}, "evaluate every N steps (0 = 10 times per run)");
    v(eval_size, "eval-size", int64_t{256}, "sequences in each periodic evaluation");
    v(eval_tokens, "eval-tokens", int64_t{0},
      "token budget of each periodic evaluation: its lm perplexity reads this many valid tokens "
      "and its sampled set holds at most eval-tokens/max-len sequences (0 = auto: 65536 tokens "
      "and --eval-size sequences, scaled down in proportion for a model whose forward pass costs "
      "over 2^23 FLOPs per token, to no less than one batch; GPT-2 small at --batch 4 --max-len "
      "256 scores 8 sequences and 2049 tokens)");
    v(log_every, "log-every", int64_t{10}, "write a metrics.jsonl line every N steps");
    v(checkpoint_every, "checkpoint-every", int64_t{0},
      "write a resumable checkpoint every N steps (0 = only at the end)");
    v(threads, "threads", int64_t{0},
      "intra-op threads (0 = all cores); recorded and reused on --resume, since the thread count "
      "changes the floating-point sums");
    v(max_bad_steps, "max-bad-steps", int64_t{10},
      "stop (keeping the last checkpoint) after this many steps in a row with a non-finite loss; "
      "each one's update is skipped");
    v(swag_start, "swag-start", int64_t{0},
      "SWAG: collect weight snapshots after this step (0 = no SWAG); moments go to "
      "swag.safetensors");
    v(swag_every, "swag-every", int64_t{0}, "SWAG: steps between snapshots (0 = 10)");
    v(swag_rank, "swag-rank", int64_t{-1},
      "SWAG: deviation columns kept, K (-1 = 20; 0 = diagonal SWAG)");
    v(swag_lr, "swag-lr", 0.0,
      "SWAG: constant learning rate from --swag-start on (0 = keep the cosine schedule)");
    v(mae_schedule, "mae-schedule", std::string("joint"),
      "MAE models: joint (gate and experts together) | bcd:G,E (block coordinate descent: G "
      "gate-only steps, then E expert-only steps, repeated)");
  }
  TrainConfig() { visit(DefaultsVisitor{}); }
  void validate() const;
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j, const std::string& source);
};

// Where training starts: random initialisation (init empty), or finetuning a model directory,
// fully (adapter.kind none) or through adapters with every base weight frozen. Saved as the
// "finetune" section of config.json, so --resume rebuilds the same setup.
//
// End-to-end distillation (LoLCATs / Liger-style conversion finetuning): with a teacher and
// kl_weight > 0 the loss of an lm head is CE + kl_weight * T^2 * KL(p_teacher || p_student),
// p = softmax(logits / T), averaged over the scored positions (train/distill_loss.h).
struct StartFrom {
  std::string init;           // model directory whose weights are loaded ("" = random init)
  AdapterConfig adapter;      // adapters attached on top (kind none = full finetuning)
  bool merge = false;         // fold the adapters into the weights of the model written at the end
  std::string teacher;        // distillation: the teacher's model directory ("" = none)
  double kl_weight = 0;       // distillation: w, the weight of the KL term (0 = off)
  double kl_temperature = 1;  // distillation: T, the softmax temperature of both distributions

  // The distillation fields' single list: defaults, --help, the CLI flags and their JSON keys in
  // the "finetune" section (a section written before they existed loads with these defaults).
  template <class V>
  void visit_distill(V&& v) {
    v(teacher, "teacher", std::string(),
      "distil from this model directory: add kl-weight * T^2 * KL(teacher || student) on the "
      "next-token distributions to the loss (lm heads only; needs --kl-weight > 0)");
    v(kl_weight, "kl-weight", 0.0,
      "weight w of the KL-to-teacher term: loss = CE + w * T^2 * KL (0 = off; needs --teacher)");
    v(kl_temperature, "kl-temperature", 1.0,
      "softmax temperature T of the teacher's and the student's distributions in the KL term "
      "(the term is multiplied by T^2, as in Hinton et al. 2015, so its gradient keeps its scale)");
  }
  StartFrom() { visit_distill(DefaultsVisitor{}); }
  bool distills() const { return kl_weight > 0; }
  // The distillation fields' consistency (each a seqlab::Error naming the flags); the teacher
  // itself is checked when it is loaded (DistillLoss).
  void validate() const;
  nlohmann::json to_json() const;
  static StartFrom from_json(const nlohmann::json& j, const std::string& source);
};

// What each periodic evaluation scores (--eval-size, --eval-tokens): `sequences` sampled
// sequences at the longest training length and, for lm tasks, the first `lm_tokens` tokens of the
// valid split. `scaled` says the automatic budget was cut for the model's size (below): the
// defaults hold while one token's forward pass costs at most kEvalFlopsPerToken (every model the
// suites train, the largest at half of it: tests/test_eval_budget_suites.cpp), and a costlier model
// gets both numbers scaled by kEvalFlopsPerToken / its cost, but never less than one batch (the
// perplexity in whole batches of windows).
struct EvalBudget {
  int64_t sequences = 0, lm_tokens = 0;
  bool scaled = false;
};
inline constexpr double kEvalFlopsPerToken = 8388608;  // 2^23
inline constexpr int64_t kDefaultEvalLmTokens = 65536;
EvalBudget eval_budget(const ModelConfig& model, const TrainConfig& train, int64_t max_len);

struct TrainOutcome {
  int64_t start_step = 0, steps = 0;        // resumed from, finished at
  double first_loss = 0, last_loss = 0;     // mean training loss of the first / last log window
  double eval_accuracy = 0, eval_loss = 0;  // final evaluation at the longest training length
  double eval_ppl = 0;  // lm tasks: final validation perplexity (train/evaluate_lm.h); 0 otherwise
  double seconds = 0;
  // Of which: the loop over this run's steps, and the periodic evaluations inside it (rank 0), so
  // (loop_seconds - eval_seconds) / (steps - start_step) is the time of one training step.
  double loop_seconds = 0, eval_seconds = 0;
  int64_t parameters = 0, trainable = 0;  // all parameters / those the optimizer updates
  double last_kl = 0;  // distillation: mean KL term (T^2 KL, before the weight) of the last window
};

// The seed of the run that trained a model directory (its "train" section; errors name `dir`), 0
// for a model that records none. Evaluation draws its fixed sets from it by default.
uint64_t trained_seed(const LoadedModel& m, const std::string& dir);

// Trains a model for a task and writes the model directory `out`. With resume = true and a
// checkpoint in `out`, continues from it with the configs saved there (train.steps may be raised
// by steps_override > 0). Without resume, refuses an `out` that already holds a model.
// With start.init set, the model config must equal the init directory's, whose weights are
// loaded before step 1 (see StartFrom).
// stop_after > 0 ends the run early after that step (as an interruption would), having written a
// checkpoint there; a later resume continues the same schedule.
// With dp set, this process is one rank of a data-parallel run (train/distributed.h): the configs
// and weights come from rank 0, which alone reads and writes `out`.
TrainOutcome train_model(ModelConfig model_cfg, TaskConfig task_cfg, TrainConfig train_cfg,
                         const std::string& out, bool resume, int64_t steps_override = 0,
                         int64_t stop_after = 0, const StartFrom& start = {},
                         DataParallel* dp = nullptr);

}  // namespace seqlab
