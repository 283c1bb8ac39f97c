// seqlab suite: run an experiment grid (src/seqlab/exp/suite.h) and write its results.jsonl,
// report.md and plots; and suite-cell, the hidden command each of the suite's worker processes
// runs for one grid cell (src/seqlab/exp/cell.h).
#include "commands.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/machine.h"
#include "seqlab/core/progress.h"
#include "seqlab/exp/cell.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/suite.h"

#include <fmt/format.h>

#include <sys/prctl.h>

#include <csignal>
#include <filesystem>
#include <memory>

namespace seqlab::cli {

namespace {

namespace fs = std::filesystem;

struct SuiteArgs {
  std::string name, only;
  bool quick = false, no_plots = false, list_cells = false, report_only = false;
  SuiteOptions opt;
  Common common;
};

int run_suite_command(SuiteArgs& a) {
  if (a.common.quiet) log_level() = 0;
  warn_if_reference_blas();
  auto spec = make_suite(a.name, a.quick);
  if (a.list_cells) {
    if (!a.only.empty()) keep_cells(spec, a.only);
    for (const auto& c : spec.cells) fmt::print("{}\n", c.at("id").get<std::string>());
    return 0;
  }
  auto& sopt = a.opt;
  sopt.only = a.only;
  SEQLAB_CHECK(!sopt.out.empty(), "suite: --out is required (except with --list)");
  sopt.plots = !a.no_plots;
  sopt.worker_exe = fs::read_symlink("/proc/self/exe").string();
  if (a.report_only) {
    fmt::print("report: {}\n", rewrite_report(spec, sopt));
    return 0;
  }
  auto r = run_suite(spec, sopt);
  fmt::print("suite {}: {} cells ({} ran, {} already done, {} failed) in {}\nreport: {}\n",
             spec.name, r.cells, r.ran, r.skipped, r.failed, format_duration(r.seconds), r.report);
  return r.failed ? 1 : 0;
}

struct CellArgs {
  std::string cell_file, out;
  Common common;
};

int run_suite_cell(const CellArgs& a) {
  // A worker dies with its suite: a rerun must not race an orphan on the same run directory.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  const std::string& file = a.cell_file;
  SEQLAB_CHECK(file.size() > 5 && file.substr(file.size() - 5) == ".json",
               "--cell must name a .json file, got {}", file);
  nlohmann::json spec;
  try {
    spec = nlohmann::json::parse(read_file(file));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", file, e.what());
  }
  a.common.apply();
  auto result = run_cell(spec, a.out);
  result["machine"] = machine_facts().to_json();  // results differ across CPUs (core/machine.h)
  write_file_atomic(file.substr(0, file.size() - 5) + ".result.json", result.dump(1) + "\n");
  return 0;
}

}  // namespace

bool is_memory_measuring_cell(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "suite-cell") return false;
  std::string file;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cell" && i + 1 < argc) file = argv[i + 1];
    if (arg.rfind("--cell=", 0) == 0) file = arg.substr(7);
  }
  try {
    const auto spec = nlohmann::json::parse(read_file(file), nullptr, false);
    return !spec.is_discarded() && cell_kind_of(spec).measures_memory;
  } catch (const std::exception&) {
    return false;
  }
}

void add_suite_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<SuiteArgs>();
  std::string suite_help =
      "run an experiment grid; writes results.jsonl, report.md and plots.\nSuites:";
  for (const auto& e : suite_registry()) suite_help += "\n  " + e.name + ": " + e.description;
  auto* suite = app.add_subcommand("suite", suite_help);
  suite->add_option("name", a->name, "suite name")->required();
  suite->add_flag("--quick", a->quick, "the small grid (under 10 minutes on 2 cores)");
  suite->add_option("--out", a->opt.out,
                    "output directory (rerun to resume); required unless --list");
  suite->add_option("--jobs", a->opt.jobs, "worker processes (0 = number of cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  suite->add_flag("--no-plots", a->no_plots, "skip gnuplot");
  suite->add_option("--only", a->only,
                    "run only the cells whose id matches this regex, plus the cells they wait on "
                    "(the report covers every finished cell); rerunning without it in the same "
                    "--out skips what finished");
  suite->add_flag("--list", a->list_cells,
                  "print the grid's cell ids (after --only) on stdout and run nothing");
  suite->add_flag("--report-only", a->report_only,
                  "rebuild report.md and plots from --out's results.jsonl; run no cell (rows that "
                  "lack the input-blind baseline get it, in results.jsonl too)");
  suite->add_flag("-q,--quiet", a->common.quiet, "no progress or info lines on stderr");
  actions.push_back({suite, [a] { return run_suite_command(*a); }});

  auto c = std::make_shared<CellArgs>();
  auto* cell = app.add_subcommand("suite-cell", "");  // empty description: hidden from --help
  cell->add_option("--cell", c->cell_file, "cell spec (JSON)")->required();
  cell->add_option("--out", c->out, "run directory")->required();
  c->common.add(cell);
  actions.push_back({cell, [c] { return run_suite_cell(*c); }});
}

}  // namespace seqlab::cli
