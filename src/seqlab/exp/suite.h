// Experiment suites: a named grid of cells (exp/cell.h), run in parallel worker processes,
// resumable, ending in results.jsonl, report.md and plots.
//
// Layout of a suite's output directory:
//   cells/<id>.json        the cell's spec (written before it runs); "after": [ids] makes it wait
//                          for those cells and fail without running if one of them failed
//   cells/<id>.result.json its rows, written atomically when it finishes: a finished cell is
//                          skipped on rerun, and a killed one resumes from its checkpoint
//   cells/<id>.log         the worker's stderr
//   runs/<id>/             the cell's model directory (checkpoints, metrics.jsonl)
//   results.jsonl          one row per (cell, test length[, saturation scale]), grid order, each
//                          with the input-blind baseline of its test set (blind_accuracy);
//                          rewritten as each cell finishes (without the baselines, which the
//                          end of the run or --report-only adds), so a stopped suite keeps it
//   report.md, *.svg, *.png
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace seqlab {

struct SuiteSpec {
  std::string name;
  std::string description;  // one line, for `seqlab suite --help`
  std::string claims;       // markdown: the papers' claims this suite checks, quoted in report.md
  std::vector<nlohmann::json> cells;
  // Tasks whose report gets a width x length accuracy heatmap per architecture.
  std::vector<std::string> heatmap_tasks;
  // A suite whose rows are not accuracy-per-length (e.g. conversion) writes its own results
  // section: rows -> markdown, with plots rendered into plot_dir (empty: no plots).
  std::function<std::string(const std::vector<nlohmann::json>& rows, const std::string& plot_dir)>
      custom_report;
};

struct SuiteEntry {
  std::string name;
  std::string description;
  std::function<SuiteSpec(bool quick)> make;
};

const std::vector<SuiteEntry>& suite_registry();
SuiteSpec make_suite(const std::string& name, bool quick);

// Keeps the cells whose id matches `pattern` (ECMAScript regex, searched anywhere in the id), plus
// every cell they wait on ("after"), in grid order: `seqlab suite NAME --only RE` runs a slice of a
// grid (SuiteOptions::only), and a later run without --only in the same --out skips what the
// slice finished. A pattern that is not a valid regex, or that matches no cell, is an error naming
// the suite.
void keep_cells(SuiteSpec& spec, const std::string& pattern);

struct SuiteOptions {
  std::string out;
  int64_t jobs = 0;        // worker processes (0 = number of cores)
  std::string worker_exe;  // the seqlab binary: workers run `<exe> suite-cell --cell F --out D`
  bool plots = true;       // render plots with gnuplot when it is installed
  // Run only the cells keep_cells(spec, only) keeps (empty = all). results.jsonl and report.md
  // still cover every finished cell of the whole grid, so a slice rerun into a finished run's
  // directory does not shrink them.
  std::string only;
};

struct SuiteOutcome {
  int64_t cells = 0, ran = 0, skipped = 0, failed = 0;
  double seconds = 0;
  std::string report;  // path of report.md
};

// Runs every unfinished cell (of the slice opt.only keeps), then writes results.jsonl, report.md
// and the plots over every finished cell of the whole grid.
SuiteOutcome run_suite(const SuiteSpec& full, const SuiteOptions& opt);

// How far a running cell has trained: the step on the last line of the newest metrics.jsonl in
// its run directory (or in a folder of it, such as an LM cell's model/); -1 before the cell has
// logged a step, or while that line is half-written.
int64_t cell_step(const std::string& run_dir);

// The suite's progress line names each running cell's step: "<id> <step>/<steps>", or
// "<id> step <step>" when `steps` is not known (<= 0); empty when `step` < 0.
std::string cell_step_status(const std::string& id, int64_t step, int64_t steps);

// The rows of <out>/results.jsonl, in file order. Errors: the file is missing, a line is not JSON.
std::vector<nlohmann::json> read_results(const std::string& out);

// Rebuilds report.md and the plots from <out>/results.jsonl, running no cell. Rows without
// blind_accuracy (measured before it existed) get it, and results.jsonl is rewritten with it.
std::string rewrite_report(const SuiteSpec& spec, const SuiteOptions& opt);

// Helpers for suite definitions: a cell with the given configs and a readable unique id.
nlohmann::json make_cell(const std::string& id, const nlohmann::json& model,
                         const nlohmann::json& task, const nlohmann::json& train,
                         const std::vector<int64_t>& test_lengths, int64_t eval_size,
                         const nlohmann::json& tags = nlohmann::json::object());

}  // namespace seqlab
