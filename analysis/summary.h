// Summary: exact descriptive statistics over a set of stored values (docs/metrics.md §3.1).
//
// Method (stated once, used everywhere in llmcap): percentiles are computed by LINEAR
// INTERPOLATION BETWEEN CLOSEST RANKS on the sorted values (Hyndman & Fan type 7, the method of
// numpy's default and Excel's PERCENTILE.INC): for p in [0, 100] and n sorted values
// x[0..n-1], h = (n − 1) · p / 100, result = x[⌊h⌋] + (h − ⌊h⌋) · (x[⌊h⌋+1] − x[⌊h⌋]).
// P0 is the minimum, P100 the maximum, a single value is every percentile.
// stddev is the SAMPLE standard deviation (n − 1 denominator); 0 when count < 2.
// NaN values are dropped before anything is computed (they are not measurements).
//
// Plain values, no shared state: safe to use from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmcap::analysis {

struct Summary {
  std::uint64_t count = 0;  // values summarised; 0 means every other field is meaningless (0)
  double mean = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;  // sample standard deviation
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double p999 = 0;  // P99.9
  // Further percentiles asked for (an SLA bound on P75 or P99.99): {p, value}, p ascending.
  std::vector<std::pair<double, double>> extra;

  bool empty() const { return count == 0; }
  // The stored percentile for p ∈ {50, 90, 95, 99, 99.9} or one of `extra`; nullopt for any
  // other p or when empty. Compare p with a small tolerance so 99.9 parsed from text matches.
  std::optional<double> at(double p) const;
};

// True when p is one of the percentiles every Summary stores (50, 90, 95, 99, 99.9).
bool is_summary_percentile(double p);
// True when p can be asked for at all: 0 < p < 100.
bool is_valid_percentile(double p);
// "95", "99.9", "99.99", "75": the shortest text that reads back as p. Plans spell a bound
// "p" + this ("p99.9"); results key a value "p" + this with '.' as '_' ("p99_9").
std::string percentile_label(double p);
// The percentiles of `wanted` that are not stored anyway, sorted, without duplicates.
std::vector<double> extra_percentiles(const std::vector<double>& wanted);

// Percentile p ∈ [0, 100] of values already sorted ascending (method above). p outside
// [0, 100] is clamped. nullopt when sorted is empty.
std::optional<double> percentile(const std::vector<double>& sorted, double p);

// Summarises values (taken by value: sorted in place); `extra` adds those percentiles
// (see extra_percentiles()).
Summary summarize(std::vector<double> values, const std::vector<double>& extra = {});

}  // namespace llmcap::analysis
