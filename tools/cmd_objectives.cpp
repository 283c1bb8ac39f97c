// seqlab pretrain: one cell of the `objectives` suite from the command line: pretrain a model with
// one objective on the synthetic multilingual corpus, then probe and finetune it on POS tagging
// and subject-number classification in each language (methods/objectives.h, methods/downstream.h).
#include "cli_fields.h"
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/exp/cells/objectives.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace seqlab::cli {

namespace {

struct PretrainArgs {
  ObjectivesConfig cfg;
  std::string out;
  bool json = false, quiet = false;
};

int run_pretrain(PretrainArgs& a) {
  if (a.quiet) log_level() = 0;
  warn_if_reference_blas();
  a.cfg.validate();  // before anything is written
  SEQLAB_CHECK(!std::filesystem::exists(a.out) || std::filesystem::is_directory(a.out),
               "--out {} exists and is not a directory", a.out);
  const auto rows = run_objectives(a.cfg, a.out);
  if (a.json) {
    std::cout << nlohmann::json{{"config", a.cfg.to_json()}, {"rows", rows}}.dump() << "\n";
    return 0;
  }
  fmt::print("{} on {} ({}), seed {}: held-out pretraining loss {}\n", a.cfg.objective, a.cfg.stack,
             a.cfg.arch, a.cfg.seed,
             a.cfg.objective == "none"
                 ? std::string("-")
                 : fmt::format("{:.4f}", rows[0]["pretrain_heldout_loss"].get<double>()));
  fmt::print("{:<8} {:<6} {:<9} {:>9}\n", "language", "task", "mode", "accuracy");
  for (const auto& r : rows)
    fmt::print("{:<8} {:<6} {:<9} {:>9.4f}\n", r["language"].get<std::string>(),
               r["task"].get<std::string>(), r["mode"].get<std::string>(),
               r["accuracy"].get<double>());
  return 0;
}

}  // namespace

void add_pretrain_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<PretrainArgs>();
  auto* sub = app.add_subcommand(
      "pretrain",
      "pretrain with one objective (clm, mlm, clm_pairs, denoise, translate, none) on the "
      "synthetic three-language corpus, then probe and finetune on POS tagging and subject "
      "number in each language (one cell of `seqlab suite objectives`)");
  a->cfg.visit(AddFlagsVisitor{sub, "Objective, model and downstream", {}});
  sub->add_option("--out", a->out, "run directory (pretrained.safetensors; rerun to reuse it)")
      ->required()
      ->group("Output");
  sub->add_flag("--json", a->json, "print the result rows as one JSON document on stdout")
      ->group("Output");
  sub->add_flag("-q,--quiet", a->quiet, "no progress or info lines on stderr");
  actions.push_back({sub, [a] { return run_pretrain(*a); }});
}

}  // namespace seqlab::cli
