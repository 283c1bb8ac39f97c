#include "seqlab/exp/stats.h"

#include "seqlab/core/error.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace seqlab {

SampleStats sample_stats(const std::vector<double>& v) {
  SampleStats s;
  s.n = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(s.n);
  if (s.n > 1) {
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(s.n - 1));
  }
  return s;
}

namespace {

// t_{0.975, df} for df = 1..30 (the standard table, 4 decimals).
constexpr std::array<double, 30> kT975 = {
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};

// Cornish-Fisher: the t quantile as a series in 1/df around the normal quantile z (Abramowitz &
// Stegun 26.7.5), for large df.
double t_cornish_fisher(double z, double df) {
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
  return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df);
}

}  // namespace

double t_quantile_975(double df) {
  SEQLAB_CHECK(df >= 1, "t quantile: degrees of freedom must be >= 1, got {}", df);
  constexpr double kZ975 = 1.959963984540054;
  if (df > kT975.size()) return t_cornish_fisher(kZ975, df);
  // Between two tabulated df: t is close to linear in 1/df.
  const auto lo = static_cast<size_t>(std::floor(df));
  const double t_lo = kT975[lo - 1];
  if (df == static_cast<double>(lo)) return t_lo;
  const double t_hi = lo + 1 <= kT975.size() ? kT975[lo] : t_cornish_fisher(kZ975, lo + 1.0);
  const double w = (1.0 / lo - 1.0 / df) / (1.0 / lo - 1.0 / (lo + 1.0));
  return t_lo + w * (t_hi - t_lo);
}

Interval mean_interval(const SampleStats& s) {
  if (s.n < 2) return {};
  const double h = t_quantile_975(static_cast<double>(s.n - 1)) * s.sd / std::sqrt(double(s.n));
  return {s.mean - h, s.mean + h, true};
}

Difference welch_difference(const std::vector<double>& a, const std::vector<double>& b) {
  const auto sa = sample_stats(a), sb = sample_stats(b);
  Difference d;
  d.diff = sa.mean - sb.mean;
  d.na = sa.n, d.nb = sb.n;
  if (sa.n < 2 || sb.n < 2) return d;
  const double va = sa.sd * sa.sd / sa.n, vb = sb.sd * sb.sd / sb.n, se = std::sqrt(va + vb);
  d.df = va + vb > 0 ? (va + vb) * (va + vb) / (va * va / (sa.n - 1) + vb * vb / (sb.n - 1))
                     : static_cast<double>(sa.n + sb.n - 2);
  const double h = t_quantile_975(d.df) * se;
  d.ci = {d.diff - h, d.diff + h, true};
  return d;
}

std::string fmt_interval(const Interval& i, int digits, bool sign) {
  if (!i.ok) return "";
  return sign ? fmt::format("[{:+.{}f}, {:+.{}f}]", i.lo, digits, i.hi, digits)
              : fmt::format("[{:.{}f}, {:.{}f}]", i.lo, digits, i.hi, digits);
}

std::string fmt_mean_sd_ci(const SampleStats& s, int digits) {
  if (s.n == 0) return "";
  if (s.n == 1) return fmt::format("{:.{}f} (n=1, no interval)", s.mean, digits);
  return fmt::format("{:.{}f} ± {:.{}f} {}", s.mean, digits, s.sd, digits,
                     fmt_interval(mean_interval(s), digits));
}

std::string fmt_difference(const Difference& d, int digits) {
  if (!d.ci.ok)
    return fmt::format("{:+.{}f}, n = {} vs {}, no interval: not resolved", d.diff, digits, d.na,
                       d.nb);
  return fmt::format("{:+.{}f} {}, Welch 95%, n = {} vs {}{}", d.diff, digits,
                     fmt_interval(d.ci, digits, true), d.na, d.nb,
                     d.ci.contains_zero() ? "; not resolved (the interval includes 0)" : "");
}

double half_width_95(const std::vector<double>& v) {
  const auto i = mean_interval(sample_stats(v));
  return i.ok ? (i.hi - i.lo) / 2 : 0.0;
}

std::string best_vs_rest(const std::vector<std::pair<std::string, std::vector<double>>>& samples,
                         int digits) {
  if (samples.size() < 2) return "";
  size_t best = 0;
  for (size_t i = 1; i < samples.size(); ++i)
    if (sample_stats(samples[i].second).mean > sample_stats(samples[best].second).mean) best = i;
  std::string s;
  for (size_t i = 0; i < samples.size(); ++i)
    if (i != best)
      s += fmt::format(
          "- {} − {}: {}\n", samples[best].first, samples[i].first,
          fmt_difference(welch_difference(samples[best].second, samples[i].second), digits));
  return s;
}

std::string seeds_note(int64_t n_seeds) {
  if (n_seeds == 1)
    return "One seed (n=1): no interval, so no difference between the rows below is resolved.";
  return fmt::format(
      "{} seeds: mean ± sd over seeds and [lo, hi], the mean's 95% Student t interval "
      "(df = {}).",
      n_seeds, n_seeds - 1);
}

}  // namespace seqlab
