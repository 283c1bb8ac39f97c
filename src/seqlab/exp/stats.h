// Statistics for the suites' reports: the mean and sample sd of per-seed values, the 95% Student
// t interval of a mean (df = n - 1), and Welch's interval of a difference of two means (issue 36:
// a claim that rests on a difference states it with its interval, and says when 0 is inside).
//
// The t quantile is ours: the 0.975 quantiles for df 1..30 from the standard table, a linear
// interpolation in 1/df for the fractional df of Welch's approximation, and beyond 30 the
// Cornish-Fisher expansion around the normal quantile (error below 1e-4 there).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace seqlab {

// Mean and sample standard deviation (n - 1) of a suite's per-seed values; sd is 0 below two.
struct SampleStats {
  double mean = 0, sd = 0;
  int64_t n = 0;
};
SampleStats sample_stats(const std::vector<double>& v);

// t such that P(T_df <= t) = 0.975, for a Student t with df >= 1 degrees of freedom (fractional
// df allowed). t_quantile_975(1) = 12.706, (9) = 2.262, (inf) -> 1.960. Throws below df 1.
double t_quantile_975(double df);

// A 95% interval; `ok` is false when there is none (fewer than two values on a side).
struct Interval {
  double lo = 0, hi = 0;
  bool ok = false;
  bool contains_zero() const { return ok && lo <= 0 && hi >= 0; }
};

// The 95% t interval of the mean: mean ± t_{0.975, n-1} sd / sqrt(n); none for n < 2.
Interval mean_interval(const SampleStats& s);

// Welch's 95% interval of mean(a) - mean(b) for independent samples with unequal variances:
// se = sqrt(sa²/na + sb²/nb), df by Welch-Satterthwaite (na + nb - 2 when both sds are 0, where the
// interval is the point itself). None when either side has fewer than two values.
struct Difference {
  double diff = 0;  // mean(a) - mean(b)
  double df = 0;
  int64_t na = 0, nb = 0;
  Interval ci;
};
Difference welch_difference(const std::vector<double>& a, const std::vector<double>& b);

// "[lo, hi]" at `digits` decimals (sign forced with `sign`); "" when !i.ok.
std::string fmt_interval(const Interval& i, int digits, bool sign = false);

// A report cell over seeds: "" (n = 0), "x (n=1, no interval)", or "mean ± sd [lo, hi]".
std::string fmt_mean_sd_ci(const SampleStats& s, int digits);

// A difference a claim rests on: "+1.23 [+0.50, +1.96], Welch 95%, n = 3 vs 3" and, when the
// interval includes 0, "; not resolved (the interval includes 0)"; with a side of one value,
// "+1.23, n = 3 vs 1, no interval: not resolved".
std::string fmt_difference(const Difference& d, int digits);

// The half-width of the mean's 95% t interval ("±h" in a compact cell); 0 below two values.
double half_width_95(const std::vector<double>& v);

// Per-seed samples by label -> one line per label: the sample with the highest mean against each
// other, "- best − other: +0.05 [+0.01, +0.09], Welch 95%, n = 3 vs 3" (fmt_difference), in the
// given order. Empty with fewer than two samples.
std::string best_vs_rest(const std::vector<std::pair<std::string, std::vector<double>>>& samples,
                         int digits);

// The sentence a report gives about its seeds: with one, that there is no interval and no
// difference between its rows is resolved; with more, how the cells read.
std::string seeds_note(int64_t n_seeds);

// The number of distinct "seed" values among result rows (rows without one are not counted).
template <class Rows>
int64_t count_seeds(const Rows& rows) {
  std::vector<uint64_t> seen;
  for (const auto& r : rows)
    if (r.contains("seed") && r["seed"].is_number_unsigned()) {
      const auto s = r["seed"].template get<uint64_t>();
      bool dup = false;
      for (auto x : seen) dup |= x == s;
      if (!dup) seen.push_back(s);
    }
  return static_cast<int64_t>(seen.size());
}

}  // namespace seqlab
