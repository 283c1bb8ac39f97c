// seqlab convert and seqlab finetune: swap-then-finetune (src/seqlab/convert/convert.h,
// src/seqlab/model/adapters.h).
#include "cli_fields.h"
#include "commands.h"
#include "dist_cli.h"

#include "seqlab/convert/convert_dir.h"
#include "seqlab/core/error.h"
#include "seqlab/train/finetune.h"

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
  const auto r = convert_model_dir(a.model, a.out, a.cfg, dp.get());
  if (!r.written) return 0;  // rank 0 writes the model and reports
  const auto& conv = r.convert;
  const auto &before = r.before, &after = r.after;
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out}, {"convert", conv}}.dump() << "\n";
    return 0;
  }
  fmt::print("converted {} (softmax) -> {} ({}): {} parameters\n", a.model, a.out, r.arch,
             r.parameters);
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

// The request: the task flags given on the command line override the model's task's fields.
FinetuneRequest finetune_request(const FinetuneArgs& a) {
  FinetuneRequest r;
  r.model = a.model;
  r.out = a.out;
  const auto given = a.task.to_json();
  for (auto it = given.begin(); it != given.end(); ++it) {
    std::string flag = it.key();
    for (auto& c : flag)
      if (c == '_') c = '-';
    if (a.sub->count("--" + flag)) r.task_overrides[it.key()] = it.value();
  }
  r.train = a.train;
  r.steps_override = a.sub->count("--steps") ? a.train.steps : 0;
  r.start = a.start;
  r.resume = a.resume;
  return r;
}

int run_finetune(FinetuneArgs& a) {
  ensure_passive_omp_wait();
  if (a.dp.launcher()) return a.dp.launch();
  if (a.quiet) log_level() = 0;
  warn_if_reference_blas();
  auto dp = a.dp.join();
  auto r = finetune_model_dir(finetune_request(a), dp.get());
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
