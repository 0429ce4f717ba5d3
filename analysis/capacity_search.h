// CapacitySearch: a pure state machine that finds the highest passing offered rate
// (docs/metrics.md §5.2: bracketing and bisection, confirmed by a longer repeat).
// It never runs anything: the caller runs each step it asks for and reports the verdict.
//
//   CapacitySearch search(options);
//   while (auto step = search.next_rate()) {
//     Outcome o = run_step(step->rate_rps, base_duration × step->duration_factor);
//     search.report(step->rate_rps, o);
//   }
//   CapacitySearchResult r = search.result();
//
// Algorithm:
// 1. Start at initial_rate_rps (clamped to [min, max]); rate_from_knee() gives it by Little's
//    law from a concurrency sweep's knee: rate ≈ concurrency / mean E2E.
// 2. Expand: while nothing failed, multiply the highest pass by expand_factor (capped at
//    max_rate_rps); while nothing passed, divide the lowest fail (floored at min_rate_rps).
//    A fail at min_rate_rps ends with kNoPassingRate; a pass at max_rate_rps goes to confirm
//    (result flags at_max_rate: the true capacity may be higher).
// 3. Bisect (arithmetic midpoint) while hi − lo > max(relative_resolution × lo,
//    absolute_resolution_rps).
// 4. Confirm: repeat the best pass with duration_factor = confirm_duration_factor. Pass →
//    kConfirmed. Fail at r → the bracket was wrong (the short pass at r was noise near the
//    SLA boundary, or short steps overstate what a longer run holds): every rate above
//    r × (1 − confirm_step_down) now counts as failed (hi), lo becomes the highest short-step
//    pass at or below that, and the search resumes from step 2 — expanding down when no such
//    pass is known, bisecting otherwise — to confirm again. At most max_confirm_attempts
//    confirms in all, then kConfirmFailed (no qualified rate). So one lucky short step cannot
//    leave the search stepping down 5 % at a time from a rate far above the capacity.
// Inconclusive steps: the same step is retried up to inconclusive_retries times (attempt
// counts up); if still inconclusive it is TREATED AS A FAIL (conservative: capacity is never
// claimed from a step we could not judge) and counted in inconclusive_treated_as_fail, which
// reports must show. max_steps bounds the total number of reported steps (kStepLimit).
//
// Not thread-safe (one owner drives it). Constructor throws std::invalid_argument naming the
// field for invalid options; report() throws std::logic_error when the rate is not the one
// next_rate() asked for or the search is over.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/knee.h"
#include "analysis/verdict.h"

namespace llmcap::analysis {

struct CapacitySearchOptions {
  double initial_rate_rps = 1;
  double min_rate_rps = 0.1;
  double max_rate_rps = 10000;
  double expand_factor = 2.0;          // > 1
  double relative_resolution = 0.05;   // bracket width relative to the passing rate
  double absolute_resolution_rps = 0;  // or absolute width; whichever is larger stops
  int inconclusive_retries = 1;
  double confirm_duration_factor = 3.0;  // confirm step length relative to a search step
  double confirm_step_down = 0.05;       // relative step down after a failed confirm
  int max_confirm_attempts = 3;
  int max_steps = 40;
};

// Little's law: concurrency / mean E2E (s). nullopt when either is ≤ 0.
std::optional<double> rate_from_knee(double concurrency, double mean_e2e_ns);
// The same from a sweep's knee (knee.h); nullopt when the knee point has no mean_e2e_ns.
std::optional<double> rate_from_knee(const Knee& knee);

struct SearchStep {
  double rate_rps = 0;
  bool confirm = false;
  int attempt = 1;               // 2, 3, ... when retrying an inconclusive step
  double duration_factor = 1.0;  // multiply the plan's step duration by this
};

enum class SearchEnd : std::uint8_t {
  kRunning,
  kConfirmed,      // qualified_rate_rps holds the confirmed rate
  kNoPassingRate,  // even min_rate_rps failed
  kConfirmFailed,  // every confirm attempt failed
  kStepLimit,      // max_steps reached before confirming
};
std::string_view to_string(SearchEnd e);  // "running", "confirmed", "no_passing_rate", ...

struct SearchTrial {
  SearchStep step;
  Outcome outcome = Outcome::kInconclusive;
  bool treated_as_fail = false;  // inconclusive after its retries
};

struct CapacitySearchResult {
  SearchEnd end = SearchEnd::kRunning;
  std::optional<double> qualified_rate_rps;  // only when kConfirmed
  std::optional<double> highest_pass_rps;    // best short-step pass seen
  std::optional<double> lowest_fail_rps;
  bool at_max_rate = false;  // qualified rate equals max_rate_rps
  int steps = 0;
  int inconclusive_treated_as_fail = 0;
  std::vector<SearchTrial> trials;
};

class CapacitySearch {
 public:
  explicit CapacitySearch(CapacitySearchOptions options);

  // The next step to run; the same step again until it is reported. nullopt when done.
  std::optional<SearchStep> next_rate();
  void report(double rate_rps, Outcome outcome);
  bool done() const { return result_.end != SearchEnd::kRunning; }
  const CapacitySearchResult& result() const { return result_; }

 private:
  std::optional<SearchStep> plan_next();
  void finish(SearchEnd end);

  CapacitySearchOptions options_;
  CapacitySearchResult result_;
  std::optional<double> lo_;          // highest pass (search phase)
  std::optional<double> hi_;          // lowest fail
  std::vector<double> short_passes_;  // every passing short step's rate
  bool confirming_ = false;
  double confirm_rate_ = 0;
  int confirm_attempts_ = 0;
  int retries_used_ = 0;
  std::optional<SearchStep> pending_;
};

}  // namespace llmcap::analysis
