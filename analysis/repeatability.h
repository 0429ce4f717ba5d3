// Repeatability of a phase run N times (e.g. the capacity search repeated on one target):
// mean, spread, a Student-t confidence interval of the mean capacity, and "inconclusive" when
// the runs disagree beyond a relative bound.
//
// * stddev: sample standard deviation (n − 1). CI = mean ± t(df = n − 1, confidence) · s / √n,
//   two-sided; defined for n ≥ 2. t comes from the table in repeatability.cc (two-sided
//   0.90 / 0.95 / 0.99, df 1–30 exactly, then 40, 60, 120, ∞; between tabulated df the next
//   LOWER df is used, which widens the interval slightly: conservative).
// * Runs disagree when (max − min) / mean > max_relative_spread (default 0.10), or when some
//   runs found a capacity and others found none. All runs finding none is consistent.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llmcap::analysis {

// Two-sided Student t critical value; nullopt for df < 1 or a confidence other than
// 0.90, 0.95, 0.99.
std::optional<double> student_t_critical(int df, double confidence);

struct RepeatabilityOptions {
  double max_relative_spread = 0.10;
  double confidence = 0.95;  // 0.90, 0.95 or 0.99
};

struct Repeatability {
  std::size_t runs = 0;
  std::size_t runs_with_value = 0;
  double mean = 0, min = 0, max = 0, stddev = 0;
  double relative_spread = 0;             // (max − min) / mean
  std::optional<double> ci_low, ci_high;  // n ≥ 2 values
  std::optional<double> t_critical;
  bool inconclusive = false;
  std::string reason;  // why inconclusive (empty otherwise)
};

// values: one per run, nullopt for a run with no capacity. Throws std::invalid_argument
// ("confidence: ...") for an unsupported confidence.
Repeatability assess_repeatability(const std::vector<std::optional<double>>& values,
                                   const RepeatabilityOptions& options = {});

}  // namespace llmcap::analysis
