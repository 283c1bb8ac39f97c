// seqlab convert and seqlab finetune: swap-then-finetune (src/seqlab/convert/convert.h,
// src/seqlab/model/adapters.h).
#include "cli_fields.h"
#include "commands.h"

#include "seqlab/convert/convert.h"
#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace seqlab::cli {

namespace fs = std::filesystem;

namespace {

struct ConvertArgs {
  std::string model, out;
  ConvertConfig cfg;
  bool json = false;
  Common common;
};

int run_convert(const ConvertArgs& a) {
  a.common.apply();
  a.cfg.validate();
  SEQLAB_CHECK(!fs::exists(fs::path(a.out) / kConfigFile),
               "{} already holds a model; choose another --out", a.out);
  auto teacher = load_model_dir(a.model);
  const auto teacher_task = model_task(teacher, a.model);
  auto student = convert_model(*teacher.model, a.cfg);
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
    SEQLAB_CHECK(len <= teacher.config.mixer.max_len,
                 "--distill-len {} is longer than the model's max context {}", len,
                 teacher.config.mixer.max_len);
    auto rep = distill_attention(*teacher.model, *student, *task, a.cfg, len);
    before = rep.before;
    after = rep.after;
    conv["distill"] = {{"steps", rep.steps},
                       {"length", len},
                       {"loss_before", rep.before},
                       {"loss_after", rep.after},
                       {"seconds", rep.seconds}};
  }
  nlohmann::json sections = {{"convert", conv}};
  if (teacher_task) sections["task"] = teacher_task->to_json();
  save_model_dir(a.out, *student, sections);
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out}, {"convert", conv}}.dump() << "\n";
    return 0;
  }
  fmt::print("converted {} (softmax) -> {} (linear, {}): {} parameters\n", a.model, a.out,
             student->config().mixer.feature_map, count_parameters(*student));
  if (!before.empty()) {
    fmt::print("attention transfer, {} steps: row cross-entropy per layer\n{:>6} {:>10} {:>10}\n",
               a.cfg.distill_steps, "layer", "before", "after");
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
  CLI::App* sub = nullptr;
};

int run_finetune(FinetuneArgs& a) {
  if (a.quiet) log_level() = 0;
  warn_if_reference_blas();
  const bool resuming = a.resume && fs::exists(fs::path(a.out) / kConfigFile);
  ModelConfig mc;
  TaskConfig tc;
  if (!resuming) {
    SEQLAB_CHECK(!a.model.empty(), "--model is required (the model directory to finetune)");
    auto j = read_config_json(a.model);
    const std::string src = (fs::path(a.model) / kConfigFile).string();
    mc = ModelConfig::from_json(j["model"], src);
    // The task is the model's own; task flags given on the command line override its fields.
    nlohmann::json tj = j.contains("task") ? j["task"] : nlohmann::json::object();
    const auto given = a.task.to_json();
    for (auto it = given.begin(); it != given.end(); ++it) {
      std::string flag = it.key();
      for (auto& c : flag)
        if (c == '_') c = '-';
      if (a.sub->count("--" + flag)) tj[it.key()] = it.value();
    }
    SEQLAB_CHECK(tj.contains("task"),
                 "{} does not say which task it was trained on: pass --task (and its options)",
                 src);
    tc = TaskConfig::from_json(tj, src);
    a.start.init = a.model;
  }
  const int64_t steps_override = a.sub->count("--steps") ? a.train.steps : 0;
  auto r = train_model(mc, tc, a.train, a.out, a.resume, steps_override, 0, a.start);
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out},
                                {"start_step", r.start_step},
                                {"steps", r.steps},
                                {"first_loss", r.first_loss},
                                {"last_loss", r.last_loss},
                                {"eval_loss", r.eval_loss},
                                {"parameters", r.parameters},
                                {"trainable", r.trainable},
                                {"seconds", r.seconds}}
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
      "(T2R / Hedgehog), keeping every pretrained weight; optionally distill the attention "
      "weights into the feature maps first (--distill-steps)");
  conv->add_option("--model", ca->model, "the softmax model directory to convert")->required();
  conv->add_option("--out", ca->out, "model directory to write")->required();
  ca->cfg.visit(AddFlagsVisitor{conv, "Conversion", {}});
  conv->add_flag("--json", ca->json, "print a JSON summary on stdout");
  ca->common.add(conv);
  actions.push_back({conv, [ca] { return run_convert(*ca); }});

  auto fa = std::make_shared<FinetuneArgs>();
  auto* ft = app.add_subcommand(
      "finetune",
      "train a model directory further: fully, or through LoRA / Tied-LoRA adapters with the "
      "base weights frozen (--adapter); --merge folds the adapters into the weights at the end");
  fa->sub = ft;
  ft->add_option("--model", fa->model, "the model directory to start from");
  ft->add_option("--out", fa->out, "model directory to write")->required()->group("Output");
  fa->task.visit(AddFlagsVisitor{ft, "Task (default: the model's own)", {}});
  fa->train.visit(AddFlagsVisitor{ft, "Training", {}});
  fa->start.adapter.visit(AddFlagsVisitor{ft, "Adapters", {}});
  ft->add_flag("--merge", fa->start.merge,
               "fold the adapters into the weights of the written model")
      ->group("Adapters");
  ft->add_flag("--resume", fa->resume, "continue from the checkpoint in --out")->group("Output");
  ft->add_flag("--json", fa->json, "print a JSON summary on stdout")->group("Output");
  ft->add_flag("-q,--quiet", fa->quiet, "no progress or info lines on stderr");
  actions.push_back({ft, [fa] { return run_finetune(*fa); }});
}

}  // namespace seqlab::cli
