// The CLI is one file per command group (tools/cmd_*.cpp). Each adds its subcommands to the app
// and registers an action that runs when its subcommand was given; tools/seqlab.cpp holds main(),
// the error contract and the registration of every group.
#pragma once

#include "seqlab/core/blas_check.h"
#include "seqlab/core/log.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace seqlab::cli {

// Flags most commands share.
struct Common {
  int64_t threads = 0;
  bool quiet = false;
  void add(CLI::App* app, bool with_threads = true) {
    if (with_threads)
      app->add_option("--threads", threads, "intra-op threads (0 = all cores)")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
    app->add_flag("-q,--quiet", quiet, "no progress or info lines on stderr");
  }
  void apply() const {
    const int n = threads > 0 ? static_cast<int>(threads)
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_compute_threads(n);
    if (quiet) log_level() = 0;
    warn_if_reference_blas();
  }
};

struct Action {
  CLI::App* sub;             // the subcommand
  std::function<int()> run;  // runs when it was parsed; returns the exit code
};
using Actions = std::vector<Action>;

// One function per command file. Options must outlive parsing: keep them in objects the
// function allocates (std::make_shared) and captures in the action.
void add_eval_commands(CLI::App& app, Actions& actions);       // cmd_eval.cpp
void add_suite_commands(CLI::App& app, Actions& actions);      // cmd_suite.cpp: suite, suite-cell
void add_tokenizer_commands(CLI::App& app, Actions& actions);  // cmd_tokenizer.cpp
void add_hf_commands(CLI::App& app, Actions& actions);         // cmd_hf.cpp
void add_convert_commands(CLI::App& app, Actions& actions);    // cmd_convert.cpp
void add_generate_commands(CLI::App& app, Actions& actions);   // cmd_generate.cpp
void add_bench_commands(CLI::App& app, Actions& actions);      // cmd_bench.cpp
void add_classify_commands(CLI::App& app, Actions& actions);   // cmd_classify.cpp
void add_embed_commands(CLI::App& app, Actions& actions);      // cmd_embed.cpp
void add_pretrain_commands(CLI::App& app, Actions& actions);   // cmd_objectives.cpp
void add_list_commands(CLI::App& app, Actions& actions);       // cmd_list.cpp: archs, tasks
void add_serve_commands(CLI::App& app, Actions& actions);      // cmd_serve.cpp
void add_pack_commands(CLI::App& app, Actions& actions);       // cmd_pack.cpp
void add_quantize_commands(CLI::App& app, Actions& actions);   // cmd_quantize.cpp
// cmd_train.cpp. It needs the command line itself (argv[1..]): --nproc relaunches it for the
// workers.
void add_train_commands(CLI::App& app, Actions& actions,
                        const std::vector<std::string>& command_line);

// seqlab eval on a classifier with --exit-threshold or --swag-samples (cmd_classify.cpp).
struct ClassifierEvalArgs {
  std::string model, split, exit_thresholds;
  int64_t n = 0, batch = 0, seed = -1, swag_samples = 0;
  double swag_scale = 0.5;
  bool json = false;
};
int eval_classifier(const ClassifierEvalArgs& a);

// Whether this command line is a suite worker (`suite-cell --cell FILE`) whose cell's kind
// measures memory (CellKind::measures_memory): main() then leaves glibc's malloc defaults
// (core/malloc_tune.h). False for anything it cannot read; the command itself reports that.
bool is_memory_measuring_cell(int argc, char** argv);

// main(): runs the command line and returns the exit code; a seqlab::Error, c10::Error or other
// exception prints "error: ..." and returns 2. parse_only stops after the flags are parsed and
// checked, before any command runs (fuzz/fuzz_cli.cpp; it builds tools/ with SEQLAB_CLI_NO_MAIN).
int run_cli(int argc, char** argv, bool parse_only);

}  // namespace seqlab::cli
