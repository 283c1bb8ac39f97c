// seqlab: the command-line interface. Thin: parses flags into the library's typed configs, calls
// one library function per command, prints results on stdout (logs and progress go to stderr).
//
// Errors: any bad flag, unknown name, impossible config or malformed file prints one line
// "error: ..." on stderr and exits with code 2, without a backtrace and without partial output.
#include "cli_fields.h"
#include "commands.h"

#include "seqlab/core/blas_check.h"
#include "seqlab/core/error.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/exp/cell.h"
#include "seqlab/exp/suite.h"
#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/launch.h"
#include "seqlab/train/trainer.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <torch/torch.h>

#include <sys/prctl.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

using namespace seqlab;
using seqlab::cli::Common;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> parse_lengths(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(used == item.size() && !item.empty() && v > 0,
                 "--lengths: '{}' is not a positive integer (expected e.g. 64,256,1024)", item);
    out.push_back(v);
  }
  SEQLAB_CHECK(!out.empty(), "--lengths is empty");
  return out;
}

void cmd_archs() {
  fmt::print("architectures (--arch):\n");
  for (const auto& e : mixer_registry()) fmt::print("  {:<10} {}\n", e.name, e.description);
  fmt::print("feature maps (--arch linear --feature-map NAME, or --arch NAME):\n");
  for (const auto& e : feature_map_registry()) fmt::print("  {:<10} {}\n", e.name, e.description);
}

void cmd_tasks() {
  for (const auto& e : task_registry()) fmt::print("  {:<20} {}\n", e.name, e.description);
}

struct EvalArgs {
  std::string model, task, lengths;
  int64_t n = 256, batch = 32;
  int64_t seed = -1;
  bool json = false;
  std::string split = "valid";  // lm models: the corpus split to measure
  int64_t max_tokens = 0;       // lm models: score only the split's first N tokens (0 = all)
  std::string exit_thresholds;  // classifiers: early-exit curve at these thresholds
  int64_t swag_samples = 0;     // classifiers: SWAG Bayesian model average of N samples
  double swag_scale = 0.5;
};

void cmd_eval(const EvalArgs& a) {
  if (!a.exit_thresholds.empty() || a.swag_samples != 0) {
    SEQLAB_CHECK(a.task.empty() && a.lengths.empty(),
                 "--exit-threshold / --swag-samples evaluate on the model's own task and length; "
                 "drop --task / --lengths");
    cli::ClassifierEvalArgs c;
    c.model = a.model;
    c.split = a.split;
    c.exit_thresholds = a.exit_thresholds;
    c.n = a.n;
    c.batch = a.batch;
    c.seed = a.seed;
    c.swag_samples = a.swag_samples;
    c.swag_scale = a.swag_scale;
    c.json = a.json;
    cli::eval_classifier(c);
    return;
  }
  auto lm = load_model_dir(a.model);
  TaskConfig tc;
  uint64_t seed = 0;
  if (lm.sections.contains("task")) tc = TaskConfig::from_json(lm.sections["task"], a.model);
  if (lm.sections.contains("train"))
    seed = TrainConfig::from_json(lm.sections["train"], a.model).seed;
  if (a.seed >= 0) seed = static_cast<uint64_t>(a.seed);
  if (!a.task.empty()) tc.task = a.task;
  auto task = make_task(tc);
  const auto& mc = lm.config;
  SEQLAB_CHECK(mc.vocab_size == task->vocab_size() && mc.head == task->head() &&
                   mc.n_classes == task->n_classes(),
               "model {} was built for a different task (vocab {}, head {}) than '{}' (vocab {}, "
               "head {})",
               a.model, mc.vocab_size, mc.head, tc.task, task->vocab_size(), task->head());
  SEQLAB_CHECK(a.n > 0 && a.batch > 0, "--n and --batch must be positive");
  if (const auto* lmt = dynamic_cast<const LmTask*>(task.get())) {
    // A language model is measured by perplexity on held-out text, in windows of its training
    // length, rather than on synthetic lengths.
    const Split split = parse_split(a.split);
    SEQLAB_CHECK(a.max_tokens >= 0, "--max-tokens must be >= 0, got {}", a.max_tokens);
    auto r = evaluate_lm(*lm.model, *lmt, split, tc.max_len, a.batch, a.max_tokens);
    if (a.json) {
      std::cout << nlohmann::json{{"task", tc.task}, {"arch", mc.mixer.arch}, {"split", a.split},
                                  {"ppl", r.ppl},    {"nll", r.nll},          {"tokens", r.tokens}}
                       .dump()
                << "\n";
    } else {
      fmt::print(
          "{} on {} ({}, {}): {} perplexity {:.4f} (nll {:.4f} nats over {} tokens, "
          "context {})\n",
          mc.mixer.arch, tc.task, tc.corpus, tc.tokenizer, a.split, r.ppl, r.nll, r.tokens,
          tc.max_len);
    }
    return;
  }
  const auto lengths =
      a.lengths.empty() ? std::vector<int64_t>{tc.max_len} : parse_lengths(a.lengths);
  for (auto L : lengths)
    SEQLAB_CHECK(L >= task->min_length(), "--lengths: {} is below task {}'s minimum length {}", L,
                 tc.task, task->min_length());
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::string> extra_lines;  // the task's own metrics, one line per length
  for (auto L : lengths) {
    auto r = evaluate(*lm.model, *task, L, a.n, a.batch, seed, parse_split(a.split));
    nlohmann::json row = {{"length", r.length},
                          {"accuracy", r.accuracy},
                          {"seq_accuracy", r.seq_accuracy},
                          {"loss", r.loss},
                          {"n", r.n}};
    if (task->has_blind_baseline())
      row["blind_accuracy"] =
          evaluate_blind(*task, L, a.n, a.batch, seed, parse_split(a.split)).accuracy;
    std::string kv;
    for (const auto& [k, v] : r.extra) {
      row[k] = v;
      kv += fmt::format("{}{} {:.4f}", kv.empty() ? "" : ", ", k, v);
    }
    if (!kv.empty()) extra_lines.push_back(fmt::format("length {}: {}", r.length, kv));
    results.push_back(row);
  }
  if (a.json) {
    nlohmann::json doc = {{"task", tc.task}, {"arch", mc.mixer.arch}, {"results", results}};
    if (mc.mixer.arch == "linear") doc["feature_map"] = mc.mixer.feature_map;
    std::cout << doc.dump() << "\n";
    return;
  }
  const std::string arch =
      mc.mixer.arch == "linear" ? fmt::format("linear ({})", mc.mixer.feature_map) : mc.mixer.arch;
  fmt::print("{} on {}\n{:>8} {:>10} {:>10} {:>10} {:>8} {:>10}\n", arch, tc.task, "length",
             "accuracy", "seq_acc", "loss", "n", "blind");
  for (const auto& r : results)
    fmt::print("{:>8} {:>10.4f} {:>10.4f} {:>10.4f} {:>8} {:>10}\n", r["length"].get<int64_t>(),
               r["accuracy"].get<double>(), r["seq_accuracy"].get<double>(),
               r["loss"].get<double>(), r["n"].get<int64_t>(),
               r.contains("blind_accuracy")
                   ? fmt::format("{:.4f}", r["blind_accuracy"].get<double>())
                   : std::string("-"));
  fmt::print(
      "(blind: accuracy of always guessing the most frequent class at each scored position, on "
      "the same sequences; - where the length alone fixes the answer)\n");
  for (const auto& line : extra_lines) fmt::print("{}\n", line);  // see the task's header
}

int run(int argc, char** argv, bool parse_only) {
  CLI::App app{"seqlab: turn Transformers into RNNs, and test what each architecture can learn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SEQLAB_VERSION);
  Common common;

  // train
  auto* train = app.add_subcommand("train", "train a model on a task; writes a model directory");
  ModelConfig mc;
  TaskConfig tc;
  TrainConfig trc;
  std::string out;
  bool resume = false, train_json = false;
  tc.visit(cli::AddFlagsVisitor{train, "Task", {}});
  mc.visit(cli::AddFlagsVisitor{train, "Model", {"vocab-size", "head", "n-classes"}});
  trc.visit(cli::AddFlagsVisitor{train, "Training", {}});
  train->add_option("--out", out, "model directory to write")->required()->group("Output");
  train
      ->add_flag("--resume", resume,
                 "continue from the checkpoint in --out (saved configs are used; --steps may "
                 "extend the run)")
      ->group("Output");
  train->add_flag("--json", train_json, "print a JSON summary on stdout")->group("Output");
  common.add(train, /*with_threads=*/false);  // --threads is a TrainConfig field, saved with it
  // Data parallel (train/distributed.h): c10d TCPStore rendezvous + ProcessGroupGloo.
  DistConfig dist;
  int64_t nproc = 1;
  const char* dp_group = "Data parallel (c10d / Gloo)";
  train
      ->add_option("--nproc", nproc,
                   "start N local data-parallel workers (each gets --batch/N rows of every "
                   "batch and, without --threads, cores/N threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256))
      ->group(dp_group);
  train->add_option("--rank", dist.rank, "this worker's rank (default: $RANK, else 0)")
      ->group(dp_group);
  train
      ->add_option("--world-size", dist.world_size,
                   "number of workers in all (default: $WORLD_SIZE, else 1)")
      ->group(dp_group);
  train
      ->add_option("--master-addr", dist.master_addr,
                   "rank 0's address (default: $MASTER_ADDR, else 127.0.0.1)")
      ->group(dp_group);
  train
      ->add_option("--master-port", dist.master_port,
                   "rank 0's rendezvous port (default: $MASTER_PORT, else 29500; --nproc picks a "
                   "free one)")
      ->group(dp_group);
  train
      ->add_option("--dist-timeout", dist.timeout,
                   "seconds to wait for workers to join, and for any one collective")
      ->capture_default_str()
      ->group(dp_group);

  // eval
  auto* eval = app.add_subcommand("eval", "evaluate a model directory on a task at given lengths");
  EvalArgs ea;
  eval->add_option("--model", ea.model, "model directory")->required();
  eval->add_option("--task", ea.task, "task (default: the one the model was trained on)");
  eval->add_option("--lengths", ea.lengths,
                   "comma-separated test lengths (default: the longest training length)");
  eval->add_option("--n", ea.n, "sequences per length")->capture_default_str();
  eval->add_option("--batch", ea.batch, "sequences per batch")->capture_default_str();
  eval->add_option("--seed", ea.seed, "evaluation seed (default: the training seed)");
  eval->add_flag("--json", ea.json, "print one JSON document on stdout");
  eval->add_option("--exit-threshold", ea.exit_thresholds,
                   "classifiers with --exits: comma-separated confidence thresholds; prints the "
                   "speed/accuracy curve (accuracy, mean layers, examples/s at batch 1) and "
                   "per-exit ECE (a threshold above 1 runs every layer)");
  eval->add_option("--swag-samples", ea.swag_samples,
                   "classifiers trained with --swag-start: Bayesian model average of N SWAG "
                   "samples, beside SWA and the plain weights (accuracy, NLL, ECE, agreement with "
                   "annotators)");
  eval->add_option("--swag-scale", ea.swag_scale, "SWAG: covariance scale of the samples (0 = SWA)")
      ->capture_default_str();
  eval->add_option("--split", ea.split,
                   "corpus split to measure (valid, test, train): lm models and dataset tasks")
      ->capture_default_str();
  eval->add_option("--max-tokens", ea.max_tokens,
                   "lm models: score the split's first N tokens only (0 = all)")
      ->capture_default_str();
  common.add(eval);

  // suite
  std::string suite_help =
      "run an experiment grid; writes results.jsonl, report.md and plots.\nSuites:";
  for (const auto& e : suite_registry()) suite_help += "\n  " + e.name + ": " + e.description;
  auto* suite = app.add_subcommand("suite", suite_help);
  std::string suite_name;
  bool quick = false, no_plots = false;
  SuiteOptions sopt;
  suite->add_option("name", suite_name, "suite name")->required();
  suite->add_flag("--quick", quick, "the small grid (under 10 minutes on 2 cores)");
  suite->add_option("--out", sopt.out,
                    "output directory (rerun to resume); required unless --list");
  suite->add_option("--jobs", sopt.jobs, "worker processes (0 = number of cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  suite->add_flag("--no-plots", no_plots, "skip gnuplot");
  std::string only;
  suite->add_option("--only", only,
                    "run only the cells whose id matches this regex, plus the cells they wait on "
                    "(the report covers every finished cell); rerunning without it in the same "
                    "--out skips what finished");
  bool list_cells = false;
  suite->add_flag("--list", list_cells,
                  "print the grid's cell ids (after --only) on stdout and run nothing");
  bool report_only = false;
  suite->add_flag("--report-only", report_only,
                  "rebuild report.md and plots from --out's results.jsonl; run no cell (rows that "
                  "lack the input-blind baseline get it, in results.jsonl too)");
  suite->add_flag("-q,--quiet", common.quiet, "no progress or info lines on stderr");

  // suite-cell: one grid cell in a worker process (started by `seqlab suite`).
  auto* cell = app.add_subcommand("suite-cell", "");  // empty description: hidden from --help
  std::string cell_file, cell_out;
  cell->add_option("--cell", cell_file, "cell spec (JSON)")->required();
  cell->add_option("--out", cell_out, "run directory")->required();
  common.add(cell);

  cli::Actions actions;
  cli::add_tokenizer_commands(app, actions);
  cli::add_hf_commands(app, actions);
  cli::add_convert_commands(app, actions);
  cli::add_generate_commands(app, actions);
  cli::add_bench_commands(app, actions);
  cli::add_classify_commands(app, actions);
  cli::add_embed_commands(app, actions);
  cli::add_pretrain_commands(app, actions);

  auto* archs = app.add_subcommand("archs", "list architectures and feature maps");
  auto* tasks = app.add_subcommand("tasks", "list tasks");

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

  if (*suite) {
    if (common.quiet) log_level() = 0;
    warn_if_reference_blas();
    auto spec = make_suite(suite_name, quick);
    if (list_cells) {
      if (!only.empty()) keep_cells(spec, only);
      for (const auto& c : spec.cells) fmt::print("{}\n", c.at("id").get<std::string>());
      return 0;
    }
    sopt.only = only;
    SEQLAB_CHECK(!sopt.out.empty(), "suite: --out is required (except with --list)");
    sopt.plots = !no_plots;
    sopt.worker_exe = fs::read_symlink("/proc/self/exe").string();
    if (report_only) {
      fmt::print("report: {}\n", rewrite_report(spec, sopt));
      return 0;
    }
    auto r = run_suite(spec, sopt);
    fmt::print("suite {}: {} cells ({} ran, {} already done, {} failed) in {}\nreport: {}\n",
               spec.name, r.cells, r.ran, r.skipped, r.failed, format_duration(r.seconds),
               r.report);
    return r.failed ? 1 : 0;
  }
  if (*cell) {
    // A worker dies with its suite: a rerun must not race an orphan on the same run directory.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    SEQLAB_CHECK(cell_file.size() > 5 && cell_file.substr(cell_file.size() - 5) == ".json",
                 "--cell must name a .json file, got {}", cell_file);
    nlohmann::json spec;
    try {
      spec = nlohmann::json::parse(read_file(cell_file));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: not valid JSON ({})", cell_file, e.what());
    }
    common.apply();
    auto result = run_cell(spec, cell_out);
    write_file_atomic(cell_file.substr(0, cell_file.size() - 5) + ".result.json",
                      result.dump(1) + "\n");
  }
  for (auto& a : actions)
    if (*a.sub) return a.run();
  if (*archs) cmd_archs();
  if (*tasks) cmd_tasks();
  if (*eval) {
    common.apply();
    cmd_eval(ea);
  }
  if (*train) {
    const bool worker = train->count("--rank") > 0;  // a launched (or hand-started) worker
    if (nproc > 1 && !worker) {
      // The launcher: this process only starts and supervises the workers.
      // The workers get their rank, world size and rendezvous from the launcher: any given on
      // the command line are left out (the port is kept below).
      SEQLAB_CHECK(dist.master_addr.empty() || dist.master_addr == "127.0.0.1" ||
                       dist.master_addr == "localhost",
                   "--nproc starts workers on this machine; --master-addr {} is not local (start "
                   "one process per worker with --rank/--world-size instead)",
                   dist.master_addr);
      std::vector<std::string> args;
      for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        bool dropped = false;
        for (const char* f : {"--master-addr", "--master-port", "--rank", "--world-size"}) {
          if (a == f && i + 1 < argc) {
            ++i;
            dropped = true;
          } else if (a.rfind(std::string(f) + "=", 0) == 0) {
            dropped = true;
          }
        }
        if (!dropped) args.push_back(a);
      }
      if (!train->count("--threads")) {
        const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        args.push_back("--threads");
        args.push_back(std::to_string(std::max<int64_t>(1, cores / nproc)));
      }
      const int port =
          train->count("--master-port") ? static_cast<int>(dist.master_port) : free_local_port();
      auto lr = launch_local_workers(self_executable(), args, static_cast<int>(nproc), port,
                                     dist.timeout);
      SEQLAB_CHECK(lr.code == 0,
                   "data-parallel worker rank {} {}; the other workers stopped {:.1f} s later",
                   lr.failed_rank, lr.failure, lr.seconds_to_stop);
      return 0;
    }
    common.apply();
    const int64_t steps_override = train->count("--steps") ? trc.steps : 0;
    const DistConfig d = dist.resolved();
    SEQLAB_CHECK(nproc == 1 || nproc == d.world_size, "--nproc {} disagrees with --world-size {}",
                 nproc, d.world_size);
    std::unique_ptr<DataParallel> dp;
    if (d.distributed()) dp = std::make_unique<DataParallel>(d);
    auto r = train_model(mc, tc, trc, out, resume, steps_override, 0, {}, dp.get());
    if (dp && !dp->root()) return 0;  // rank 0 reports the run
    if (train_json) {
      std::cout << nlohmann::json{{"out", out},
                                  {"start_step", r.start_step},
                                  {"steps", r.steps},
                                  {"first_loss", r.first_loss},
                                  {"last_loss", r.last_loss},
                                  {"eval_accuracy", r.eval_accuracy},
                                  {"eval_loss", r.eval_loss},
                                  {"eval_ppl", r.eval_ppl},
                                  {"seconds", r.seconds}}
                       .dump()
                << "\n";
    } else {
      fmt::print("trained {} steps in {:.1f}s: loss {:.4f} -> {:.4f}, eval accuracy {:.4f}\n{}\n",
                 r.steps - r.start_step, r.seconds, r.first_loss, r.last_loss, r.eval_accuracy,
                 out);
    }
  }
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
  return seqlab::cli::run_cli(argc, argv, /*parse_only=*/false);
}
#endif
