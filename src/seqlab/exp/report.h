// report.md and plots for a suite, from its result rows.
//
// Tables: for every task, one row per (arch, d_model, n_layer) with the accuracy at each test
// length as mean over seeds (best seed in parentheses); a cell is marked ✓ when the mean reaches
// the success threshold of 90%. Saturation rows (saturation_scale set) get their own table; so
// do anbn's "accepted" and, for tasks that score by kind of example (<kind>_share and
// <kind>_right, e.g. dyck_bounded's members and three kinds of negatives), the accuracy per kind.
// Plots (gnuplot, SVG and PNG): accuracy against test length per architecture, one per task; and
// for the spec's heatmap tasks, accuracy over width × test length, one per architecture.
// Validation rows (split "valid", exp/cells/plain.h) are left out of both: they choose settings.
#pragma once

#include "seqlab/exp/stats.h"  // SampleStats, the intervals: every report uses them
#include "seqlab/exp/suite.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace seqlab {

constexpr double kSuccessAccuracy = 0.90;

// Writes <out>/report.md (and plots under <out>/plots when `plots` and gnuplot is installed);
// returns the report's path.
std::string write_report(const SuiteSpec& spec, const std::vector<nlohmann::json>& rows,
                         const std::string& out, bool plots, int64_t failed_cells);

// Whether gnuplot is on the PATH.
bool have_gnuplot();

// Runs a gnuplot script body once per terminal (SVG 720x480, PNG 900x600), writing
// <dir>/<stem>.<ext>.gp and <dir>/<stem>.svg and .png; returns the names of the images made (a
// failure is logged). gnuplot runs in `dir`: the body names its data files relative to it
// ('task.dat', not a full path), so the directory stays valid when moved.
std::vector<std::string> render_plot(const std::string& dir, const std::string& stem,
                                     const std::string& body);

// `s` in single quotes for /bin/sh, with embedded quotes escaped.
std::string shell_quote(const std::string& s);

// The markdown tables alone (testable without files).
std::string report_tables(const std::vector<nlohmann::json>& rows);

// The plots section ("\n## Plots\n\n" and the image links) of the accuracy-per-length report,
// rendered into plot_dir: for a custom report that keeps the standard plots.
std::string report_plots(const std::vector<nlohmann::json>& rows, const std::string& plot_dir,
                         const std::vector<std::string>& heatmap_tasks = {});

}  // namespace seqlab
