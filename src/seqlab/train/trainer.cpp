#include "seqlab/train/trainer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/blas_check.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/checkpoint.h"
#include "seqlab/train/distill_loss.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/mae_schedule.h"
#include "seqlab/train/memory_estimate.h"
#include "seqlab/model/deq.h"
#include "seqlab/train/optim.h"
#include "seqlab/train/run_configs.h"
#include "seqlab/train/swag.h"

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

// The training loss: a model with early exits trains every exit, on the sum of their losses
// (Schwartz et al. 2020); padding is left out of the pooling. With distillation (lm heads only)
// it is CE + w * KL term (train/distill_loss.h), and *kl is set to the KL term.
torch::Tensor task_part(SeqModelImpl& model, const Batch& b, DistillLoss* distill,
                        torch::Tensor* kl) {
  if (distill) {
    auto logits = model.forward(b.input, b.valid);  // [B,T,V]
    *kl = distill->term(logits, b);
    return task_loss(logits, b) + distill->weight() * *kl;
  }
  if (model.exits) {
    torch::Tensor sum;
    for (const auto& l : model.exit_logits(b.input, b.valid)) {
      auto li = task_loss(l, b);
      sum = sum.defined() ? sum + li : li;
    }
    return sum;
  }
  return task_loss(model.forward(b.input, b.valid), b);
}

// The task's loss plus a DEQ's Jacobian regulariser when it has one (model/deq.h).
torch::Tensor training_loss(SeqModelImpl& model, const Batch& b, DistillLoss* distill,
                            torch::Tensor* kl) {
  auto loss = task_part(model, b, distill, kl);
  if (model.deq)
    if (auto reg = model.deq->take_regularizer(); reg.defined()) loss = loss + reg;
  return loss;
}

// One training run, from setup through the loop to its finish: the resolved configs, the model
// and its optimizer, and the values the loop carries.
struct Run {
  ModelConfig model_cfg;
  TaskConfig task_cfg;
  TrainConfig train_cfg;
  StartFrom start;
  DataParallel* dp = nullptr;
  bool root = true;       // rank 0 (or no data parallelism): reads and writes `out`
  bool resuming = false;  // continues from the checkpoint in `out`
  LoadedModel init;       // the model finetuning starts from (rank 0; broadcast to the others)
  std::unique_ptr<Task> task;
  SeqModel model{nullptr};
  std::vector<std::pair<std::string, torch::Tensor>> named;  // the trainable parameters
  std::vector<torch::Tensor> params;                         // the same, unnamed
  MaeSchedule mae;
  std::unique_ptr<AdamW> opt;
  std::unique_ptr<Swag> swag;            // SWAG moments of the trainable parameters (train/swag.h)
  std::unique_ptr<DistillLoss> distill;  // the teacher, when start.distills()
  // The KL terms summed over the log window, and their count: the loop state of a checkpoint
  // does not hold them, so a window that a resume cut leaves "kl" out of its line.
  double window_kl = 0;
  int64_t window_kl_n = 0;
  int64_t swag_every = 10;
  nlohmann::json sections;  // config.json's task, train (and finetune) sections
  std::string metrics_path;
  EvalBudget eval;  // what each periodic evaluation scores (--eval-size, --eval-tokens)
  detail::LoopState loop;
  TrainOutcome res;
};

// Setup, first part: the configs this run trains with, resolved on rank 0 and handed to the other
// ranks (train/distributed.h); with them, rank 0 loads the model finetuning starts from.
void setup_configs(Run& r, const std::string& out, bool resume, int64_t steps_override) {
  DataParallel* dp = r.dp;
  try {
    if (r.root) {
      r.resuming = resume && fs::exists(fs::path(out) / kTrainStateFile);
      const int64_t vocab = detail::resolve_run_configs(
          out, resume, r.resuming, steps_override, r.model_cfg, r.task_cfg, r.train_cfg, r.start);
      // The teacher is checked with the configs, before anything is written.
      if (r.start.distills())
        r.distill = std::make_unique<DistillLoss>(r.start, r.model_cfg, vocab, r.task_cfg.max_len);
      if (dp) shard_rows(r.train_cfg.batch, 0, dp->world_size());  // --batch >= workers
      // (A resumed run's weights come from its checkpoint.)
      if (!r.start.init.empty() && !r.resuming) {
        r.init = load_model_dir(r.start.init);
        if (r.init.model->adapters) r.init.model->merge_adapters();
        SEQLAB_CHECK(r.init.config.to_json() == r.model_cfg.to_json(),
                     "{}: its model config differs from the one being trained", r.start.init);
      }
      if (dp)
        dp->share("configs", nlohmann::json{{"model", r.model_cfg.to_json()},
                                            {"task", r.task_cfg.to_json()},
                                            {"train", r.train_cfg.to_json()},
                                            {"finetune", r.start.to_json()},
                                            {"resuming", r.resuming}}
                                 .dump());
    } else {
      const auto j = nlohmann::json::parse(dp->share("configs", ""));
      r.model_cfg = ModelConfig::from_json(j["model"], "rank 0's configs");
      r.task_cfg = TaskConfig::from_json(j["task"], "rank 0's configs");
      r.train_cfg = TrainConfig::from_json(j["train"], "rank 0's configs");
      r.start = StartFrom::from_json(j["finetune"], "rank 0's configs");
      r.resuming = j["resuming"].get<bool>();
    }
  } catch (const std::exception& e) {
    if (dp) dp->publish_error("configs", e.what());
    throw;
  }
}

// Setup, second part: the task, the model (refused before it is allocated when it cannot fit),
// its trainable parameters, the optimizer and SWAG.
void setup_model(Run& r, const std::string& out) {
  const auto& model_cfg = r.model_cfg;
  const auto& task_cfg = r.task_cfg;
  const auto& train_cfg = r.train_cfg;
  DataParallel* dp = r.dp;
  r.task = make_task(task_cfg);
  set_compute_threads(static_cast<int>(train_cfg.threads));
  // Data parallel: every other rank loads the teacher from the same directory as rank 0.
  if (r.start.distills() && !r.distill)
    r.distill =
        std::make_unique<DistillLoss>(r.start, model_cfg, r.task->vocab_size(), task_cfg.max_len);

  // A run that cannot fit is refused before the model is allocated, with the estimate (for every
  // worker this machine runs).
  check_training_fits(
      estimate_training_memory(
          model_cfg,
          dp ? (train_cfg.batch + dp->world_size() - 1) / dp->world_size() : train_cfg.batch,
          task_cfg.max_len, r.start.adapter.kind != "none"),
      machine_memory_bytes(), dp ? dp->local_world_size() : 1);

  torch::manual_seed(train_cfg.seed);
  r.model = SeqModel(model_cfg);
  auto& model = r.model;
  if (r.init.model) load_model_tensors(*model, model_tensors(*r.init.model), r.start.init);
  if (r.start.adapter.kind != "none") {
    // Only the adapters train: every base weight is frozen before they are attached.
    for (auto& p : model->parameters()) p.set_requires_grad(false);
    model->attach_adapters(r.start.adapter);
  }
  SEQLAB_CHECK(!model->uses_learned_positions() || task_cfg.max_len <= model_cfg.mixer.max_len,
               "--max-len {} is longer than --max-context {} (learned positions stop there)",
               task_cfg.max_len, model_cfg.mixer.max_len);
  model->train();
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    r.named.emplace_back(p.key(), p.value());
    r.params.push_back(p.value());
  }
  r.mae = MaeSchedule::parse(train_cfg.mae_schedule);
  if (!r.mae.joint()) {
    bool gates = false, experts = false;
    for (const auto& [name, p] : r.named) (MaeSchedule::is_gate(name) ? gates : experts) = true;
    SEQLAB_CHECK(gates && experts,
                 "--mae-schedule {} alternates MAE gates and experts; this model has no trainable "
                 "{} (train an --mae model)",
                 train_cfg.mae_schedule, gates ? "experts" : "gates");
  }
  AdamWOptions aopt;
  aopt.weight_decay = train_cfg.weight_decay;
  r.opt = std::make_unique<AdamW>(r.named, aopt);
  r.swag_every = train_cfg.swag_every > 0 ? train_cfg.swag_every : 10;
  if (train_cfg.swag_start > 0 && r.root)  // the weights are the same on every rank
    r.swag = std::make_unique<Swag>(r.named, train_cfg.swag_rank < 0 ? 20 : train_cfg.swag_rank);

  r.sections = {{"task", task_cfg.to_json()}, {"train", train_cfg.to_json()}};
  if (!r.start.init.empty() || !r.start.teacher.empty()) r.sections["finetune"] = r.start.to_json();
  r.metrics_path = (fs::path(out) / kMetricsFile).string();
  r.eval = eval_budget(model_cfg, train_cfg, task_cfg.max_len);
  if (r.eval.scaled && r.root)
    log_info(
        "periodic evaluation: {} sequences and {} perplexity tokens, scaled to a model of "
        "{:.2g} FLOPs per token (--eval-tokens sets the budget)",
        r.eval.sequences, r.eval.lm_tokens, forward_flops_per_token(model_cfg, task_cfg.max_len));
  r.res.parameters = count_parameters(*model);
  r.res.trainable = count_parameters(*model, /*trainable_only=*/true);
}

// Setup, last part: where the run starts. Rank 0 resumes from the checkpoint in `out` or writes
// the directory's first state; every other rank gets rank 0's weights and position.
void start_run(Run& r, const std::string& out) {
  auto& model = r.model;
  auto& res = r.res;
  if (r.resuming && r.root) {
    res.start_step = detail::resume_checkpoint(out, *model, *r.opt, r.loop, r.swag.get(),
                                               r.train_cfg.steps, r.metrics_path);
    save_model_dir(out, *model, r.sections);  // records a raised --steps
    log_info("resuming {} from step {}", out, res.start_step);
  } else if (r.root) {
    // The directory is a loadable model from the start: a kill before the first checkpoint
    // leaves the initial weights and the configs, and --resume then starts from scratch.
    ensure_dir(out);
    write_file_atomic(r.metrics_path, "");
    save_model_dir(out, *model, r.sections);
  }
  // Every rank starts from rank 0's weights, optimizer moments and position in the run (a
  // finetuned start, adapters and a resumed checkpoint included).
  if (r.dp) detail::share_start_point(*r.dp, *model, *r.opt, res.start_step, r.loop);
  res.first_loss = r.loop.first_loss;
  const auto& task_cfg = r.task_cfg;
  const auto& train_cfg = r.train_cfg;
  log_info("{} {} on {}: {} parameters ({} trainable), {} steps of {} x {}-{} tokens, {} threads{}",
           r.start.init.empty() ? "train" : "finetune", r.model_cfg.mixer.arch, r.task->name(),
           res.parameters, res.trainable, train_cfg.steps, train_cfg.batch, task_cfg.min_len,
           task_cfg.max_len, train_cfg.threads,
           r.dp ? fmt::format(" per worker, {} data-parallel workers", r.dp->world_size()) : "");
  if (r.distill)
    log_info("distilling from {}: loss = CE + {} * {}^2 * KL(teacher || student)", r.start.teacher,
             r.distill->weight(), r.distill->temperature());
}

// Step `step`'s training batch, drawn from mix_seed(seed, step) (the data cursor is the step
// number). Data parallel: every rank draws the same batch and keeps its rows; *share is this
// rank's part of the loss normalizer, so that the sum over ranks is the mean over the whole batch.
Batch training_batch(const Run& r, int64_t step, double* share) {
  const auto& task_cfg = r.task_cfg;
  const uint64_t s = mix_seed(r.train_cfg.seed, static_cast<uint64_t>(step));
  const int64_t span = task_cfg.max_len - task_cfg.min_len + 1;
  const int64_t len = task_cfg.min_len + static_cast<int64_t>(mix_seed(s, 1) % span);
  auto batch = r.task->sample(r.train_cfg.batch, len, s);
  *share = 1;
  if (r.dp) {
    const auto [lo, hi] = shard_rows(r.train_cfg.batch, r.dp->rank(), r.dp->world_size());
    const auto all = static_cast<double>(std::max<int64_t>(1, scored_count(batch)));
    batch = slice_rows(batch, lo, hi);
    *share = static_cast<double>(scored_count(batch)) / all;
  }
  return batch;
}

// One update from a loss whose value (summed over the ranks) is lv; returns the gradient norm.
// A non-finite loss skips the update; a run that keeps producing them stops, its last checkpoint
// intact.
double update(Run& r, torch::Tensor& loss, double lv, double lr, int64_t step) {
  auto& loop = r.loop;
  r.opt->zero_grad();
  double gnorm = 0;
  if (std::isfinite(lv)) {
    loop.bad_in_a_row = 0;
    loss.backward();
    if (r.dp) {
      // The summed gradient over the shards is the whole batch's; every rank gets it.
      std::vector<torch::Tensor> grads;
      for (auto& p : r.params)
        if (p.grad().defined()) grads.push_back(p.mutable_grad());
      r.dp->allreduce_sum(grads);
    }
    r.mae.mask_gradients(r.named, step);  // block coordinate descent: one block trains per step
    gnorm = clip_grad_norm(r.params, r.train_cfg.clip);
    r.opt->step(lr);
    loop.window_loss += lv;
    loop.window_n += 1;
  } else {
    loop.bad_in_a_row += 1;
    loop.skipped += 1;
    SEQLAB_CHECK(loop.bad_in_a_row < r.train_cfg.max_bad_steps,
                 "training diverged: non-finite loss at {} steps in a row (last at step {}, "
                 "--max-bad-steps {}); try a lower --lr",
                 loop.bad_in_a_row, step, r.train_cfg.max_bad_steps);
  }
  return gnorm;
}

// The metrics.jsonl line of the training window that ends at step `done` (null between log
// steps, or when every step of the window was skipped); starts the next window.
nlohmann::json window_line(Run& r, int64_t done, double lr, double gnorm) {
  auto& loop = r.loop;
  nlohmann::json line;
  if ((done % r.train_cfg.log_every == 0 || done == r.train_cfg.steps) && loop.window_n > 0) {
    const double mean = loop.window_loss / loop.window_n;
    if (loop.first_loss < 0) loop.first_loss = r.res.first_loss = mean;
    r.res.last_loss = mean;
    line = {{"step", done}, {"loss", mean}, {"lr", lr}, {"grad_norm", gnorm}};
    if (loop.skipped) line["skipped_steps"] = loop.skipped;
    if (r.model->deq) {  // this step's solves (model/deq.h)
      const auto d = r.model->deq->stats();
      line["deq_iters"] = d.forward_iterations;
      line["deq_residual"] = d.forward_residual;
      if (d.forward_diverged) line["deq_diverged"] = true;
      if (r.model->config().deq.jac_reg > 0) line["deq_jacobian"] = d.jacobian;
      if (d.backward_iterations > 0) {
        line["deq_bwd_iters"] = d.backward_iterations;
        line["deq_bwd_residual"] = d.backward_residual;
        if (d.backward_diverged) line["deq_bwd_diverged"] = true;
      }
    }
    if (r.swag && r.swag->snapshots() > 0) line["swag_snapshots"] = r.swag->snapshots();
    if (r.distill && r.window_kl_n == loop.window_n) {  // the mean KL term, before its weight
      line["kl"] = r.res.last_kl = r.window_kl / static_cast<double>(r.window_kl_n);
    }
    loop.window_loss = 0;
    loop.window_n = 0;
    r.window_kl = 0;
    r.window_kl_n = 0;
  }
  return line;
}

// The periodic evaluation at the longest training length, added to the step's metrics line.
void evaluate_into(Run& r, int64_t done, nlohmann::json& line) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& task_cfg = r.task_cfg;
  const auto& train_cfg = r.train_cfg;
  auto ev = evaluate(*r.model, *r.task, task_cfg.max_len, r.eval.sequences, train_cfg.batch,
                     train_cfg.seed);
  line["step"] = done;
  line["eval_length"] = ev.length;
  line["eval_accuracy"] = ev.accuracy;
  line["eval_loss"] = std::isfinite(ev.loss) ? nlohmann::json(ev.loss) : nlohmann::json("nan");
  r.res.eval_accuracy = ev.accuracy;
  r.res.eval_loss = ev.loss;
  // Language models are also measured where it matters: perplexity on held-out text (the first
  // 64 Ki tokens of the valid split, fewer for a large model, so it stays quick), skipped for a
  // valid split too small to predict anything.
  const auto* lm = dynamic_cast<const LmTask*>(r.task.get());
  if (lm && lm->tokens(Split::valid).size() >= 2) {
    auto p = evaluate_lm(*r.model, *lm, Split::valid, task_cfg.max_len, train_cfg.batch,
                         r.eval.lm_tokens);
    nlohmann::json ppl = p.ppl;
    if (!std::isfinite(p.ppl)) ppl = std::isnan(p.ppl) ? "nan" : "inf";
    line["eval_ppl"] = ppl;
    r.res.eval_ppl = p.ppl;
  }
  r.res.eval_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The loop: steps start_step .. end-1. Rank 0 alone evaluates, logs and writes checkpoints.
void train_loop(Run& r, const std::string& out, int64_t end) {
  const auto& train_cfg = r.train_cfg;
  DataParallel* dp = r.dp;
  auto& res = r.res;
  std::ofstream metrics;
  if (r.root) {
    metrics.open(r.metrics_path, std::ios::app);
    SEQLAB_CHECK(metrics.is_open(), "cannot open {} for appending", r.metrics_path);
  }
  const int64_t eval_every =
      train_cfg.eval_every > 0 ? train_cfg.eval_every : std::max<int64_t>(1, train_cfg.steps / 10);
  std::optional<Progress> bar;
  if (r.root) bar.emplace("train", train_cfg.steps, res.start_step);
  // Test hook: SEQLAB_TEST_NAN_FROM_STEP=N makes every loss from step N on NaN (tests/test_cli.cpp,
  // --max-bad-steps).
  const char* nan_hook = std::getenv("SEQLAB_TEST_NAN_FROM_STEP");
  const int64_t nan_from = nan_hook ? std::atoll(nan_hook) : -1;
  // Test hook: SEQLAB_TEST_DIE_AT_STEP=N SEQLAB_TEST_DIE_RANK=r kills rank r with SIGKILL as it
  // starts step N (tests/test_distributed.cpp: a lost worker, then --resume).
  const char* die_hook = std::getenv("SEQLAB_TEST_DIE_AT_STEP");
  const char* die_rank = std::getenv("SEQLAB_TEST_DIE_RANK");
  const int64_t die_at = die_hook ? std::atoll(die_hook) : -1;
  const bool die_here = (die_rank ? std::atoll(die_rank) : 0) == (dp ? dp->rank() : 0);
  for (int64_t step = res.start_step; step < end; ++step) {
    if (step == die_at && die_here) std::raise(SIGKILL);
    double share = 1;
    auto batch = training_batch(r, step, &share);
    torch::Tensor kl;
    auto loss = training_loss(*r.model, batch, r.distill.get(), &kl);
    if (dp) loss = loss * share;
    if (nan_from >= 0 && step >= nan_from) loss = loss * std::nan("");
    double lv = loss.item<double>();
    double kv = kl.defined() ? kl.item<double>() * share : 0;  // summed over ranks: the mean
    if (dp) {
      const auto sums = dp->allreduce_values({std::isfinite(lv) ? lv : std::nan(""), kv});
      lv = sums[0];
      kv = sums[1];
    }
    double lr =
        lr_at(step, train_cfg.steps, train_cfg.warmup, train_cfg.lr, train_cfg.min_lr_ratio);
    // (The schedule, not the moments: only rank 0 keeps SWAG moments, every rank switches lr.)
    if (train_cfg.swag_start > 0 && train_cfg.swag_lr > 0 && step >= train_cfg.swag_start)
      lr = train_cfg.swag_lr;
    const int64_t done = step + 1;
    const double gnorm = update(r, loss, lv, lr, step);
    if (r.distill && std::isfinite(lv)) {  // the window of the steps update() counted
      r.window_kl += kv;
      r.window_kl_n += 1;
    }
    if (r.swag && done > train_cfg.swag_start && (done - train_cfg.swag_start) % r.swag_every == 0)
      r.swag->collect(r.named);
    nlohmann::json line = window_line(r, done, lr, gnorm);
    if (!r.root) continue;  // rank 0 alone evaluates, logs and writes checkpoints
    if (done % eval_every == 0 || done == train_cfg.steps) evaluate_into(r, done, line);
    if (!line.is_null()) {
      metrics << line.dump() << "\n";
      metrics.flush();
      // A full disk must stop the run, not silently drop lines of the log.
      SEQLAB_CHECK(metrics.good(), "cannot append to {} (disk full?)", r.metrics_path);
    }
    if ((train_cfg.checkpoint_every > 0 && done % train_cfg.checkpoint_every == 0) || done == end)
      detail::save_checkpoint(out, *r.model, *r.opt, done, r.loop, r.sections, r.swag.get());
    bar->update(done, fmt::format("loss {:.4f}", res.last_loss));
  }
  if (bar) bar->finish();
}

// The finish: a finetuning run that asked for it gets its adapters merged into the model written
// for use, once the run is complete.
void finish_run(Run& r, const std::string& out, int64_t end) {
  if (r.root && r.start.merge && r.model->adapters && end == r.train_cfg.steps) {
    // The resume point (train_state.safetensors) keeps the adapters unmerged; the model written
    // for use has them folded into its weights.
    r.model->merge_adapters();
    save_model_dir(out, *r.model, r.sections);
  }
  r.res.steps = std::max(end, r.res.start_step);
}

}  // namespace

TrainOutcome train_model(ModelConfig model_cfg, TaskConfig task_cfg, TrainConfig train_cfg,
                         const std::string& out, bool resume, int64_t steps_override,
                         int64_t stop_after, const StartFrom& start, DataParallel* dp) {
  const auto t0 = std::chrono::steady_clock::now();
  Run r;
  r.model_cfg = std::move(model_cfg);
  r.task_cfg = std::move(task_cfg);
  r.train_cfg = std::move(train_cfg);
  r.start = start;
  // Data parallel: rank 0 alone reads and writes `out`; it resolves the configs and hands them to
  // the other ranks (train/distributed.h).
  r.dp = dp;
  r.root = !dp || dp->root();
  setup_configs(r, out, resume, steps_override);
  setup_model(r, out);
  start_run(r, out);
  const int64_t end = stop_after > 0 ? std::min(stop_after, r.train_cfg.steps) : r.train_cfg.steps;
  const auto loop_start = std::chrono::steady_clock::now();
  train_loop(r, out, end);
  r.res.loop_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  finish_run(r, out, end);
  r.res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r.res;
}

}  // namespace seqlab
