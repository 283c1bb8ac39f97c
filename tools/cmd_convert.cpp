// seqlab convert and seqlab finetune: swap-then-finetune (src/seqlab/convert/convert.h,
// src/seqlab/model/adapters.h).
#include "cli_fields.h"
#include "commands.h"
#include "dist_cli.h"

#include "seqlab/convert/convert.h"
#include "seqlab/mixers/hybrid_attention.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>

namespace seqlab::cli {

namespace fs = std::filesystem;

namespace {

struct ConvertArgs {
  std::string model, out;
  ConvertConfig cfg;
  bool json = false;
  Common common;
  DistArgs dp;
};

// The teacher and its task: rank 0 reads them from --model and hands them to the other ranks of
// a data-parallel run (configs through the store, weights by broadcast), so only rank 0 needs
// the directory.
struct Teacher {
  LoadedModel model;
  std::optional<TaskConfig> task;
};

Teacher load_teacher(const ConvertArgs& a, DataParallel* dp) {
  Teacher t;
  if (!dp || dp->root()) {
    try {
      SEQLAB_CHECK(!fs::exists(fs::path(a.out) / kConfigFile),
                   "{} already holds a model; choose another --out", a.out);
      t.model = load_model_dir(a.model);
      // (Checked here as well as by convert_model: the other ranks build the teacher from its
      // config alone, without adapters.)
      SEQLAB_CHECK(!t.model.model->adapters,
                   "convert: merge the model's adapters first (finetune --merge)");
      t.task = model_task(t.model, a.model);
      if (dp)
        dp->share("teacher", nlohmann::json{{"model", t.model.config.to_json()},
                                            {"task", t.task ? t.task->to_json() : nullptr}}
                                 .dump());
    } catch (const std::exception& e) {
      if (dp) dp->publish_error("teacher", e.what());
      throw;
    }
  } else {
    const auto j = nlohmann::json::parse(dp->share("teacher", ""));
    t.model.config = ModelConfig::from_json(j["model"], "rank 0's teacher");
    t.model.model = SeqModel(t.model.config);
    t.model.model->eval();
    if (!j["task"].is_null()) t.task = TaskConfig::from_json(j["task"], "rank 0's teacher");
  }
  if (dp) {
    std::vector<torch::Tensor> ts;
    for (auto& [k, v] : model_tensors(*t.model.model)) ts.push_back(v);
    dp->broadcast(ts);
  }
  return t;
}

int run_convert(const ConvertArgs& a) {
  ensure_passive_omp_wait();
  a.cfg.validate();
  // Only attention transfer runs in parallel; a plain conversion is rank 0's alone.
  const bool parallel = a.cfg.distill_steps > 0;
  const auto check_rows = [&](int64_t workers) {
    SEQLAB_CHECK(a.cfg.distill_batch >= workers,
                 "--distill-batch {} is smaller than the {} data-parallel workers (each needs a "
                 "row of every batch)",
                 a.cfg.distill_batch, workers);
  };
  if (parallel && a.dp.launcher()) {
    check_rows(a.dp.nproc);
    return a.dp.launch();
  }
  a.common.apply();
  std::unique_ptr<DataParallel> dp;
  if (parallel)
    dp = a.dp.join();
  else if (a.dp.dist.resolved().rank > 0)
    return 0;
  if (dp) check_rows(dp->world_size());
  const bool root = !dp || dp->root();
  auto teacher = load_teacher(a, dp.get());
  const auto& teacher_task = teacher.task;
  if (a.cfg.to == HybridAttentionImpl::kArch && teacher_task)
    SEQLAB_CHECK(a.cfg.window <= teacher_task->max_len,
                 "--window {} is larger than the context the model was trained on ({} tokens)",
                 a.cfg.window, teacher_task->max_len);
  auto student = convert_model(*teacher.model.model, a.cfg);
  nlohmann::json conv = {{"from", a.model}, {"config", a.cfg.to_json()}};
  std::vector<double> before, after;
  if (a.cfg.distill_steps > 0) {
    SEQLAB_CHECK(teacher_task,
                 "{}: attention transfer needs the task the model was trained on (its config.json "
                 "has no \"task\" section)",
                 a.model);
    const auto& tc = *teacher_task;
    auto task = make_task(tc);
    const int64_t len = a.cfg.distill_len > 0 ? a.cfg.distill_len : tc.max_len;
    SEQLAB_CHECK(len <= teacher.model.config.mixer.max_len,
                 "--distill-len {} is longer than the model's max context {}", len,
                 teacher.model.config.mixer.max_len);
    auto rep = distill_attention(*teacher.model.model, *student, *task, a.cfg, len, dp.get());
    before = rep.before;
    after = rep.after;
    conv["distill"] = {{"steps", rep.steps},        {"length", len},
                       {"loss_before", rep.before}, {"loss_after", rep.after},
                       {"seconds", rep.seconds},    {"step_seconds", rep.step_seconds}};
    if (dp) conv["distill"]["workers"] = dp->world_size();
  }
  if (!root) return 0;  // rank 0 writes the model and reports
  nlohmann::json sections = {{"convert", conv}};
  if (teacher_task) sections["task"] = teacher_task->to_json();
  save_model_dir(a.out, *student, sections);
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out}, {"convert", conv}}.dump() << "\n";
    return 0;
  }
  fmt::print("converted {} (softmax) -> {} ({}): {} parameters\n", a.model, a.out,
             arch_label(student->config().mixer), count_parameters(*student));
  if (!before.empty()) {
    fmt::print("attention transfer, {} steps: {} per layer\n{:>6} {:>10} {:>10}\n",
               a.cfg.distill_steps,
               a.cfg.transfer == "output" ? "attention-output MSE" : "row cross-entropy", "layer",
               "before", "after");
    for (size_t l = 0; l < before.size(); ++l)
      fmt::print("{:>6} {:>10.4f} {:>10.4f}\n", l, before[l], after[l]);
  }
  fmt::print("{}\n", a.out);
  return 0;
}

struct FinetuneArgs {
  std::string model, out;
  TaskConfig task;
  TrainConfig train;
  StartFrom start;
  bool resume = false, json = false;
  bool quiet = false;
  DistArgs dp;
  CLI::App* sub = nullptr;
};

// The model config and task to finetune: the --model directory's, with task flags given on the
// command line overriding its task's fields.
void finetune_configs(FinetuneArgs& a, ModelConfig& mc, TaskConfig& tc) {
  SEQLAB_CHECK(!a.model.empty(), "--model is required (the model directory to finetune)");
  auto j = read_config_json(a.model);
  const std::string src = (fs::path(a.model) / kConfigFile).string();
  mc = ModelConfig::from_json(j["model"], src);
  nlohmann::json tj = j.contains("task") ? j["task"] : nlohmann::json::object();
  const auto given = a.task.to_json();
  for (auto it = given.begin(); it != given.end(); ++it) {
    std::string flag = it.key();
    for (auto& c : flag)
      if (c == '_') c = '-';
    if (a.sub->count("--" + flag)) tj[it.key()] = it.value();
  }
  SEQLAB_CHECK(tj.contains("task"),
               "{} does not say which task it was trained on: pass --task (and its options)", src);
  tc = TaskConfig::from_json(tj, src);
  a.start.init = a.model;
}

int run_finetune(FinetuneArgs& a) {
  ensure_passive_omp_wait();
  if (a.dp.launcher()) return a.dp.launch();
  if (a.quiet) log_level() = 0;
  warn_if_reference_blas();
  auto dp = a.dp.join();
  ModelConfig mc;
  TaskConfig tc;
  // Rank 0 reads the configs (the other ranks get them from it in train_model); an error here
  // reaches them as rank 0's.
  if (!dp || dp->root()) {
    try {
      const bool resuming = a.resume && fs::exists(fs::path(a.out) / kConfigFile);
      if (!resuming) finetune_configs(a, mc, tc);
    } catch (const std::exception& e) {
      if (dp) dp->publish_error("configs", e.what());
      throw;
    }
  }
  const int64_t steps_override = a.sub->count("--steps") ? a.train.steps : 0;
  auto r = train_model(mc, tc, a.train, a.out, a.resume, steps_override, 0, a.start, dp.get());
  if (dp && !dp->root()) return 0;  // rank 0 reports the run
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out},
                                {"start_step", r.start_step},
                                {"steps", r.steps},
                                {"first_loss", r.first_loss},
                                {"last_loss", r.last_loss},
                                {"eval_loss", r.eval_loss},
                                {"parameters", r.parameters},
                                {"trainable", r.trainable},
                                {"eval_ppl", r.eval_ppl},
                                {"seconds", r.seconds},
                                {"loop_seconds", r.loop_seconds},
                                {"eval_seconds", r.eval_seconds}}
                     .dump()
              << "\n";
    return 0;
  }
  fmt::print(
      "finetuned {} steps in {:.1f}s: loss {:.4f} -> {:.4f}; trainable parameters {} of {}\n{}\n",
      r.steps - r.start_step, r.seconds, r.first_loss, r.last_loss, r.trainable, r.parameters,
      a.out);
  return 0;
}

}  // namespace

void add_convert_commands(CLI::App& app, Actions& actions) {
  auto ca = std::make_shared<ConvertArgs>();
  auto* conv = app.add_subcommand(
      "convert",
      "swap each softmax attention of a trained model for linear attention with a feature map "
      "(T2R / Hedgehog) or for the hybrid of sliding-window softmax and gated linear attention "
      "(LoLCATs / Liger), keeping every pretrained weight; optionally train the new parameters "
      "first to match the teacher's attention weights or outputs (--distill-steps, --transfer)");
  conv->add_option("--model", ca->model, "the softmax model directory to convert")->required();
  conv->add_option("--out", ca->out, "model directory to write")->required();
  ca->cfg.visit(AddFlagsVisitor{conv, "Conversion", {}});
  conv->add_flag("--json", ca->json, "print a JSON summary on stdout");
  ca->common.add(conv);
  ca->dp.add(conv, "attention-transfer");
  actions.push_back({conv, [ca] { return run_convert(*ca); }});

  auto fa = std::make_shared<FinetuneArgs>();
  auto* ft = app.add_subcommand(
      "finetune",
      "train a model directory further: fully, or through LoRA / Tied-LoRA adapters with the "
      "base weights frozen (--adapter); --merge folds the adapters into the weights at the end; "
      "--teacher DIR --kl-weight W adds W * T^2 * KL(teacher || student) on the next-token "
      "distributions to the loss (end-to-end distillation of a converted model from its softmax "
      "teacher; lm heads only)");
  fa->sub = ft;
  ft->add_option("--model", fa->model, "the model directory to start from");
  ft->add_option("--out", fa->out, "model directory to write")->required()->group("Output");
  fa->task.visit(AddFlagsVisitor{ft, "Task (default: the model's own)", {}});
  fa->train.visit(AddFlagsVisitor{ft, "Training", {}});
  fa->start.adapter.visit(AddFlagsVisitor{ft, "Adapters", {}});
  ft->add_flag("--merge", fa->start.merge,
               "fold the adapters into the weights of the written model")
      ->group("Adapters");
  fa->start.visit_distill(AddFlagsVisitor{ft, "Distillation", {}});
  ft->add_flag("--resume", fa->resume, "continue from the checkpoint in --out")->group("Output");
  ft->add_flag("--json", fa->json, "print a JSON summary on stdout")->group("Output");
  ft->add_flag("-q,--quiet", fa->quiet, "no progress or info lines on stderr");
  fa->dp.add(ft, "training");
  actions.push_back({ft, [fa] { return run_finetune(*fa); }});
}

}  // namespace seqlab::cli
