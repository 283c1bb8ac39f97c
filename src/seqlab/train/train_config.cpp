// TrainConfig, StartFrom and trained_seed (train/trainer.h): the training run's configs, their
// validation and their JSON form (the "train" section of a model directory's config.json).
#include "seqlab/train/trainer.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/train/mae_schedule.h"
#include "seqlab/train/memory_estimate.h"

#include <algorithm>
#include <cmath>

namespace seqlab {

void TrainConfig::validate() const {
  SEQLAB_CHECK(steps > 0, "--steps must be positive, got {}", steps);
  SEQLAB_CHECK(batch > 0, "--batch must be positive, got {}", batch);
  SEQLAB_CHECK(lr > 0 && lr <= 1e3, "--lr must be a positive number up to 1000, got {}", lr);
  SEQLAB_CHECK(threads >= 0, "--threads must be >= 0 (0 = all cores), got {}", threads);
  SEQLAB_CHECK(max_bad_steps >= 1, "--max-bad-steps must be >= 1, got {}", max_bad_steps);
  SEQLAB_CHECK(warmup >= 0, "--warmup must be >= 0, got {}", warmup);
  SEQLAB_CHECK(min_lr_ratio >= 0 && min_lr_ratio <= 1, "--min-lr-ratio must be in [0,1], got {}",
               min_lr_ratio);
  SEQLAB_CHECK(weight_decay >= 0, "--weight-decay must be >= 0, got {}", weight_decay);
  SEQLAB_CHECK(clip >= 0, "--clip must be >= 0, got {}", clip);
  SEQLAB_CHECK(eval_every >= 0 && eval_size > 0 && log_every > 0 && checkpoint_every >= 0,
               "--eval-every/--checkpoint-every must be >= 0 and --eval-size/--log-every > 0");
  SEQLAB_CHECK(eval_tokens == 0 || eval_tokens >= 2,
               "--eval-tokens must be 0 (automatic) or at least 2, got {}", eval_tokens);
  MaeSchedule::parse(mae_schedule);
  SEQLAB_CHECK(swag_start >= 0, "--swag-start must be >= 0 (0 = no SWAG), got {}", swag_start);
  if (swag_start == 0) {
    SEQLAB_CHECK(swag_every == 0 && swag_rank == -1 && swag_lr == 0,
                 "--swag-every/--swag-rank/--swag-lr need --swag-start (the step SWAG starts "
                 "collecting at)");
  } else {
    SEQLAB_CHECK(swag_start < steps,
                 "--swag-start {} is not inside the run: it must be below --steps {}", swag_start,
                 steps);
    SEQLAB_CHECK(swag_every >= 0 && swag_rank >= -1 && swag_lr >= 0,
                 "--swag-every, --swag-rank and --swag-lr must be >= 0");
  }
}

nlohmann::json TrainConfig::to_json() const {
  nlohmann::json j;
  const_cast<TrainConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: train config must be a JSON object", source);
  TrainConfig c;
  FromJsonVisitor v{j, source, {}};
  c.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown train field '{}'", source, it.key());
  return c;
}

EvalBudget eval_budget(const ModelConfig& model, const TrainConfig& train, int64_t max_len) {
  EvalBudget b;
  if (train.eval_tokens > 0) {
    b.lm_tokens = train.eval_tokens;
    b.sequences = std::clamp<int64_t>(train.eval_tokens / max_len, 1, train.eval_size);
    return b;
  }
  const double scale = kEvalFlopsPerToken / forward_flops_per_token(model, max_len);
  if (scale >= 1) return {train.eval_size, kDefaultEvalLmTokens, false};
  b.scaled = true;
  const auto scaled = [&](double n) { return static_cast<int64_t>(std::llround(n * scale)); };
  b.sequences = std::min(train.eval_size, std::max(train.batch, scaled(train.eval_size)));
  // Whole batches of windows of max_len predicted tokens (+1: the first token is only read).
  const int64_t windows =
      train.batch * std::max<int64_t>(1, scaled(static_cast<double>(kDefaultEvalLmTokens) /
                                                static_cast<double>(max_len * train.batch)));
  b.lm_tokens = std::min(kDefaultEvalLmTokens, windows * max_len + 1);
  return b;
}

void StartFrom::validate() const {
  SEQLAB_CHECK(std::isfinite(kl_weight) && kl_weight >= 0,
               "--kl-weight must be >= 0 (0 = no distillation), got {}", kl_weight);
  SEQLAB_CHECK(std::isfinite(kl_temperature) && kl_temperature > 0,
               "--kl-temperature must be positive, got {}", kl_temperature);
  SEQLAB_CHECK(kl_weight == 0 || !teacher.empty(),
               "--kl-weight {} is a KL weight without a teacher: pass --teacher DIR, the model "
               "whose next-token distributions the student is to match",
               kl_weight);
  SEQLAB_CHECK(teacher.empty() || kl_weight > 0,
               "--teacher {} would be unused with --kl-weight 0: give the KL term a positive "
               "weight (e.g. --kl-weight 1) or drop --teacher",
               teacher);
  SEQLAB_CHECK(kl_temperature == 1 || kl_weight > 0,
               "--kl-temperature {} would be unused without --teacher and --kl-weight",
               kl_temperature);
}

nlohmann::json StartFrom::to_json() const {
  nlohmann::json j = {{"init", init}, {"adapter", adapter.to_json()}, {"merge", merge}};
  const_cast<StartFrom*>(this)->visit_distill(ToJsonVisitor{j});
  return j;
}

StartFrom StartFrom::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object() && j.contains("init") && j["init"].is_string() &&
                   j.contains("adapter") && j.contains("merge") && j["merge"].is_boolean(),
               "{}: \"finetune\" must hold init (string), adapter and merge (bool)", source);
  StartFrom s;
  s.init = j["init"].get<std::string>();
  s.adapter = AdapterConfig::from_json(j["adapter"], source);
  s.merge = j["merge"].get<bool>();
  // The distillation fields: absent from a section written before they existed (defaults: off).
  FromJsonVisitor v{j, source, {}};
  s.visit_distill(v);
  return s;
}

uint64_t trained_seed(const LoadedModel& m, const std::string& dir) {
  if (!m.sections.contains("train")) return 0;
  return TrainConfig::from_json(m.sections.at("train"), dir).seed;
}

}  // namespace seqlab
