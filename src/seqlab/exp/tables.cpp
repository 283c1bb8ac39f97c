#include "seqlab/exp/tables.h"

#include <fmt/format.h>

namespace seqlab {

std::string md_row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s += " " + c + " |";
  return s + "\n";
}

std::string md_rule(std::string_view align) {
  std::string s = "|";
  for (char a : align) s += a == 'r' ? "---:|" : "---|";
  return s + "\n";
}

std::string md_header(const std::vector<std::string>& columns, std::string_view align) {
  return md_row(columns) + md_rule(align);
}

std::string fmt_count(int64_t n) {
  if (n >= 1000000) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f} k", n / 1e3);
  return std::to_string(n);
}

std::string fmt_mean_sd(double mean, double sd, int digits) {
  return fmt::format("{:.{}f} ± {:.{}f}", mean, digits, sd, digits);
}

std::string svg_links(const std::vector<std::string>& images, const std::string& alt) {
  std::string md;
  for (const auto& i : images)
    if (i.size() > 4 && i.substr(i.size() - 4) == ".svg")
      md += fmt::format("![{}](plots/{})\n\n", alt, i);
  return md;
}

std::string gp_block(const std::string& title, const std::string& lines) {
  return "# " + title + "\n" + lines + "\n\n";
}

}  // namespace seqlab
