#include "seqlab/train/trainer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/optim.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace seqlab {

namespace fs = std::filesystem;

void TrainConfig::validate() const {
  SEQLAB_CHECK(steps > 0, "--steps must be positive, got {}", steps);
  SEQLAB_CHECK(batch > 0, "--batch must be positive, got {}", batch);
  SEQLAB_CHECK(lr > 0 && std::isfinite(lr), "--lr must be a positive number, got {}", lr);
  SEQLAB_CHECK(warmup >= 0, "--warmup must be >= 0, got {}", warmup);
  SEQLAB_CHECK(min_lr_ratio >= 0 && min_lr_ratio <= 1, "--min-lr-ratio must be in [0,1], got {}",
               min_lr_ratio);
  SEQLAB_CHECK(weight_decay >= 0, "--weight-decay must be >= 0, got {}", weight_decay);
  SEQLAB_CHECK(clip >= 0, "--clip must be >= 0, got {}", clip);
  SEQLAB_CHECK(eval_every >= 0 && eval_size > 0 && log_every > 0 && checkpoint_every >= 0,
               "--eval-every/--checkpoint-every must be >= 0 and --eval-size/--log-every > 0");
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

void save_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt, int64_t step,
                     const nlohmann::json& sections) {
  TensorMap t;
  for (auto& [k, v] : model_tensors(model)) t["model." + k] = v;
  for (auto& [k, v] : opt.state()) t[k] = v;
  t["step"] = torch::tensor({step}, torch::kLong);
  // The resume point is this one file, written atomically; the user-facing model directory
  // (config.json + model.safetensors) follows.
  save_safetensors((fs::path(out) / kTrainStateFile).string(), t,
                   {{"seqlab_version", SEQLAB_VERSION}});
  save_model_dir(out, model, sections);
}

int64_t load_checkpoint(const std::string& out, SeqModelImpl& model, AdamW& opt) {
  const std::string path = (fs::path(out) / kTrainStateFile).string();
  auto file = load_safetensors(path);
  std::map<std::string, torch::Tensor> weights, optim;
  for (auto& [k, v] : file.tensors) {
    if (k.rfind("model.", 0) == 0)
      weights[k.substr(6)] = v;
    else if (k != "step")
      optim[k] = v;
  }
  load_model_tensors(model, weights, path);
  opt.load_state(optim, path);
  auto it = file.tensors.find("step");
  SEQLAB_CHECK(it != file.tensors.end() && it->second.numel() == 1, "{}: missing 'step'", path);
  return it->second.item<int64_t>();
}

}  // namespace

TrainOutcome train_model(ModelConfig model_cfg, TaskConfig task_cfg, TrainConfig train_cfg,
                         const std::string& out, bool resume, int64_t steps_override,
                         int64_t stop_after) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string state_path = (fs::path(out) / kTrainStateFile).string();
  const bool resuming = resume && fs::exists(state_path);
  if (resuming) {
    auto j = read_config_json(out);
    const std::string src = (fs::path(out) / kConfigFile).string();
    model_cfg = ModelConfig::from_json(j["model"], src);
    SEQLAB_CHECK(j.contains("task") && j.contains("train"), "{}: no task/train section to resume",
                 src);
    task_cfg = TaskConfig::from_json(j["task"], src);
    train_cfg = TrainConfig::from_json(j["train"], src);
    if (steps_override > 0) train_cfg.steps = steps_override;
  } else {
    SEQLAB_CHECK(!fs::exists(fs::path(out) / kConfigFile),
                 "{} already holds a model; pass --resume to continue it or choose another --out",
                 out);
    if (resume) log_info("no checkpoint in {}: starting from scratch", out);
  }
  train_cfg.validate();
  auto task = make_task(task_cfg);
  if (task_cfg.min_len == 0) task_cfg.min_len = task->min_length();
  model_cfg.vocab_size = task->vocab_size();
  model_cfg.head = task->head();
  model_cfg.n_classes = task->n_classes();
  model_cfg.validate();

  torch::manual_seed(train_cfg.seed);
  SeqModel model(model_cfg);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  std::vector<torch::Tensor> params;
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    named.emplace_back(p.key(), p.value());
    params.push_back(p.value());
  }
  AdamWOptions aopt;
  aopt.weight_decay = train_cfg.weight_decay;
  AdamW opt(named, aopt);

  ensure_dir(out);
  const std::string metrics_path = (fs::path(out) / kMetricsFile).string();
  TrainOutcome res;
  if (resuming) {
    res.start_step = load_checkpoint(out, *model, opt);
    SEQLAB_CHECK(res.start_step <= train_cfg.steps, "{}: checkpoint is at step {}, past --steps {}",
                 state_path, res.start_step, train_cfg.steps);
    truncate_metrics(metrics_path, res.start_step);
    log_info("resuming {} from step {}", out, res.start_step);
  } else {
    write_file_atomic(metrics_path, "");
  }
  nlohmann::json sections = {{"task", task_cfg.to_json()}, {"train", train_cfg.to_json()}};
  log_info("train {} on {}: {} parameters, {} steps of {} x {}-{} tokens", model_cfg.mixer.arch,
           task->name(), count_parameters(*model), train_cfg.steps, train_cfg.batch,
           task_cfg.min_len, task_cfg.max_len);

  std::ofstream metrics(metrics_path, std::ios::app);
  const int64_t eval_every =
      train_cfg.eval_every > 0 ? train_cfg.eval_every : std::max<int64_t>(1, train_cfg.steps / 10);
  Progress bar("train", train_cfg.steps, res.start_step);
  double window_loss = 0;
  int64_t window_n = 0, bad_in_a_row = 0;
  bool first_window = res.start_step == 0;
  for (int64_t step = res.start_step; step < train_cfg.steps; ++step) {
    const uint64_t s = mix_seed(train_cfg.seed, static_cast<uint64_t>(step));
    const int64_t span = task_cfg.max_len - task_cfg.min_len + 1;
    const int64_t len = task_cfg.min_len + static_cast<int64_t>(mix_seed(s, 1) % span);
    auto batch = task->sample(train_cfg.batch, len, s);
    auto loss = task_loss(model->forward(batch.input), batch);
    const double lv = loss.item<double>();
    const double lr =
        lr_at(step, train_cfg.steps, train_cfg.warmup, train_cfg.lr, train_cfg.min_lr_ratio);
    opt.zero_grad();
    if (!std::isfinite(lv)) {
      // Skip the update; a run that keeps producing non-finite losses stops with the last good
      // checkpoint intact.
      SEQLAB_CHECK(++bad_in_a_row < 10,
                   "training diverged: non-finite loss at {} steps in a row "
                   "(last at step {}); try a lower --lr",
                   bad_in_a_row, step);
      continue;
    }
    bad_in_a_row = 0;
    loss.backward();
    const double gnorm = clip_grad_norm(params, train_cfg.clip);
    opt.step(lr);
    window_loss += lv;
    window_n += 1;
    const int64_t done = step + 1;
    nlohmann::json line;
    if (done % train_cfg.log_every == 0 || done == train_cfg.steps) {
      const double mean = window_loss / window_n;
      if (first_window) {
        res.first_loss = mean;
        first_window = false;
      }
      res.last_loss = mean;
      line = {{"step", done}, {"loss", mean}, {"lr", lr}, {"grad_norm", gnorm}};
      window_loss = 0;
      window_n = 0;
    }
    if (done % eval_every == 0 || done == train_cfg.steps) {
      auto ev = evaluate(*model, *task, task_cfg.max_len, train_cfg.eval_size, train_cfg.batch,
                         train_cfg.seed);
      line["step"] = done;
      line["eval_length"] = ev.length;
      line["eval_accuracy"] = ev.accuracy;
      line["eval_loss"] = ev.loss;
      res.eval_accuracy = ev.accuracy;
      res.eval_loss = ev.loss;
    }
    if (!line.is_null()) {
      metrics << line.dump() << "\n";
      metrics.flush();
    }
    const bool stop = done == stop_after;
    if ((train_cfg.checkpoint_every > 0 && done % train_cfg.checkpoint_every == 0) ||
        done == train_cfg.steps || stop)
      save_checkpoint(out, *model, opt, done, sections);
    bar.update(done, fmt::format("loss {:.4f}", res.last_loss));
    if (stop) {
      res.steps = done;
      res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return res;
    }
  }
  bar.finish();
  if (res.start_step == train_cfg.steps) save_model_dir(out, *model, sections);
  res.steps = train_cfg.steps;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace seqlab
