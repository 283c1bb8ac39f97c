// seqlab: the command-line interface. Thin: parses flags into the library's typed configs, calls
// one library function per command, prints results on stdout (logs and progress go to stderr).
// This file holds main(), the error contract and the command registration; each command lives in
// its own tools/cmd_*.cpp (tools/commands.h).
//
// Errors: any bad flag, unknown name, impossible config or malformed file prints one line
// "error: ..." on stderr and exits with code 2, without a backtrace and without partial output.
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/malloc_tune.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/launch.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/torch.h>

#include <string>
#include <vector>

using namespace seqlab;

namespace {

int run(int argc, char** argv, bool parse_only) {
  CLI::App app{"seqlab: turn Transformers into RNNs, and test what each architecture can learn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SEQLAB_VERSION);

  // The order here is the order of `seqlab --help`.
  cli::Actions actions;
  cli::add_train_commands(app, actions, std::vector<std::string>(argv + 1, argv + argc));
  cli::add_eval_commands(app, actions);
  cli::add_suite_commands(app, actions);  // suite, and the hidden suite-cell
  cli::add_tokenizer_commands(app, actions);
  cli::add_hf_commands(app, actions);
  cli::add_convert_commands(app, actions);
  cli::add_generate_commands(app, actions);
  cli::add_bench_commands(app, actions);
  cli::add_classify_commands(app, actions);
  cli::add_embed_commands(app, actions);
  cli::add_pretrain_commands(app, actions);
  cli::add_list_commands(app, actions);  // archs, tasks
  cli::add_serve_commands(app, actions);
  cli::add_pack_commands(app, actions);
  cli::add_quantize_commands(app, actions);

  std::string names;
  bool known = false;
  for (const auto* sc : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sc->get_name();
    known = known || (argc > 1 && sc->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    fmt::print(stderr, "error: unknown command '{}' (commands: {})\n", argv[1], names);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  if (parse_only) return 0;
  for (auto& a : actions)
    if (*a.sub) return a.run();
  return 0;
}

// The first line of a LibTorch error, without its C++ backtrace.
std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

}  // namespace

int seqlab::cli::run_cli(int argc, char** argv, bool parse_only) {
  try {
    return run(argc, argv, parse_only);
  } catch (const seqlab::CollectiveError& e) {
    // A data-parallel worker that lost its peer: exit code 3, so that the --nproc launcher
    // reports the worker that failed first (train/launch.h).
    fmt::print(stderr, "error: {}\n", e.what());
    return seqlab::kLostPeerExitCode;
  } catch (const seqlab::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
  } catch (const c10::Error& e) {
    fmt::print(stderr, "error: {}\n", first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", first_line(e.what()));
  }
  return 2;
}

#ifndef SEQLAB_CLI_NO_MAIN
int main(int argc, char** argv) {
  // core/malloc_tune.h, before LibTorch allocates; not in a worker whose cell measures memory.
  if (!seqlab::cli::is_memory_measuring_cell(argc, argv)) seqlab::tune_malloc();
  return seqlab::cli::run_cli(argc, argv, /*parse_only=*/false);
}
#endif
