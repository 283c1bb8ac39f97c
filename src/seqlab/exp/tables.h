// Building blocks shared by the suites' reports (exp/report.cpp, exp/suites/*.cpp): markdown table
// rows and rules, number formats, and the gnuplot data blocks and image links of their plots.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

// One markdown table row: md_row({"a", "b"}) == "| a | b |\n" (an empty cell is "|  |").
std::string md_row(const std::vector<std::string>& cells);

// The rule under a header, one character per column: 'l' is "---", 'r' (right-aligned) "---:".
// md_rule("llr") == "|---|---|---:|\n".
std::string md_rule(std::string_view align);

// A header row and its rule.
std::string md_header(const std::vector<std::string>& columns, std::string_view align);

// A count for a table: 532 -> "532", 12345 -> "12.3 k", 2500000 -> "2.50 M".
std::string fmt_count(int64_t n);

// "mean ± sd", both at `digits` decimals.
std::string fmt_mean_sd(double mean, double sd, int digits);

// The markdown image links ("![alt](plots/<image>)", each followed by a blank line) to the SVGs
// among `images` (render_plot's list, exp/report.h).
std::string svg_links(const std::vector<std::string>& images, const std::string& alt);

// One block of a gnuplot data file: "# title", the data lines, two blank lines (so that
// `index i` selects the i-th block).
std::string gp_block(const std::string& title, const std::string& lines);

// The separator before the i-th clause of a gnuplot `plot` command: "" for the first, ", " after.
inline const char* gp_sep(size_t i) {
  return i ? ", " : "";
}

}  // namespace seqlab
