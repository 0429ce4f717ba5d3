// CapacitySearch: a pure state machine that finds the highest offered rate whose CONFIRMING
// (longer) step passes (docs/metrics.md §5.2). It never runs anything: the caller runs each step
// it asks for and reports the verdict.
//
//   CapacitySearch search(options);
//   while (auto step = search.next_rate()) {
//     Outcome o = run_step(step->rate_rps, base_duration × step->duration_factor);
//     search.report(step->rate_rps, o, insufficient_samples);
//   }
//   CapacitySearchResult r = search.result();
//
// Algorithm (every rule keeps "the answer is a rate whose confirm passed"):
// 1. Start at initial_rate_rps (clamped to [min, max]); rate_from_knee() gives it by Little's
//    law from a concurrency sweep's knee: rate ≈ concurrency / mean E2E. A search planned from a
//    prediction starts at the predicted rate with first_step_factor = 1 + resolution, and
//    after a short pass there runs the step that failed just above the prediction's answer
//    (planned_high_rps, short or confirm as it was in the prediction): a target that behaves
//    like its twin costs a short pass, that fail and the confirm.
// 2. Expand with short steps: while nothing failed, multiply the highest pass by the step
//    factor (capped at max_rate_rps); while nothing passed, divide the lowest fail (floored at
//    min_rate_rps). The factor starts at first_step_factor and squares on every further move in
//    the same direction, up to expand_factor (galloping: a good start costs two steps, a bad one
//    a few more). A fail at min_rate_rps ends with kNoPassingRate; a pass at max_rate_rps goes to
//    confirm (at_max_rate: the true capacity may be higher).
// 3. Bisect (arithmetic midpoint) while hi − lo > max(relative_resolution × lo,
//    absolute_resolution_rps). With one step left, confirm at once.
// 4. Confirm: repeat the best short pass with duration_factor = confirm_duration_factor. A pass
//    ends the search (kConfirmed). A FAILED confirm at r means short steps overstate what a long
//    run holds here: from then on every step is confirm-length. It tries just below the failed
//    rate first: the highest short pass within the resolution of r, else r / (1 + resolution)
//    (a pass there is already within the resolution); while confirms keep failing it steps down
//    from the lowest fail by a factor that squares each time (1 + resolution)², … up to
//    expand_factor, then bisects between the highest confirmed pass and the lowest fail with
//    confirm-length steps until the resolution holds.
// The answer (qualified_rate_rps) is always the highest CONFIRMED pass; bracket_low/high_rps are
// that rate and the lowest failing rate above it (the answer's resolution). A search that runs
// out of steps with a confirmed pass still answers it (resolution_reached = false).
//
// Evidence rules:
// * Insufficient samples (the window held fewer than min_requests; report(..., true)): never a
//   fail. Lower rates hold even fewer requests, so the search cannot go below such a rate:
//   it confirms what it has, or ends kInsufficientSamples (an answer needs longer windows).
// * Other inconclusive steps (client-bound, no data): retried up to inconclusive_retries times
//   (attempt counts up); still inconclusive → treated as a fail for the bracket only
//   (inconclusive_treated_as_fail; capacity is never claimed from a step we could not judge).
//   The target's verdict is judged from the steps themselves (target_verdict.h), so such a step
//   never makes a target FAIL.
// max_steps bounds the total number of reported steps (kStepLimit when nothing was confirmed).
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
  double expand_factor = 2.0;  // > 1: the largest step factor of the bracketing
  // The first bracketing step factor (> 1, ≤ expand_factor); 0: expand_factor. A search
  // planned from a prediction uses 1 + relative_resolution.
  double first_step_factor = 0;
  // A search planned from a prediction: the lowest rate that failed above the prediction's
  // answer (0: none) and whether that step was a confirm. After a short pass at
  // initial_rate_rps the search runs that step next, so a target that behaves like its twin
  // costs three steps: a short pass at the answer, the fail above it, the confirm.
  double planned_high_rps = 0;
  bool planned_high_confirm = false;
  double relative_resolution = 0.05;   // bracket width relative to the passing rate
  double absolute_resolution_rps = 0;  // or absolute width; whichever is larger stops
  int inconclusive_retries = 1;
  double confirm_duration_factor = 3.0;  // confirm step length relative to a search step
  int max_steps = 40;
};

// Little's law: concurrency / mean E2E (s). nullopt when either is ≤ 0.
std::optional<double> rate_from_knee(double concurrency, double mean_e2e_ns);
// The same from a sweep's knee (knee.h); nullopt when the knee point has no mean_e2e_ns.
std::optional<double> rate_from_knee(const Knee& knee);

// A confirm's window holds at least kConfirmLifetimes request lifetimes (τ, the mean E2E of a
// passing step at or near its rate): its first τ fills the server, and the backlog check
// (verdict.cc) then fits the in-flight count over at least 4 τ, long enough to tell a count
// that settles from a queue that keeps growing. Short steps stay as planned: only a confirm
// qualifies a rate, so only a confirm needs the long view.
inline constexpr double kConfirmLifetimes = kTrendLifetimes;
// The confirm's window: max(confirm_duration_s, kConfirmLifetimes × lifetime_s), whole seconds.
double confirm_window_s(double confirm_duration_s, double lifetime_s);

struct SearchStep {
  double rate_rps = 0;
  bool confirm = false;          // a confirm-length step (duration × confirm_duration_factor)
  int attempt = 1;               // 2, 3, ... when retrying an inconclusive step
  double duration_factor = 1.0;  // multiply the plan's step duration by this
};

enum class SearchEnd : std::uint8_t {
  kRunning,
  kConfirmed,            // qualified_rate_rps holds the highest confirmed rate
  kNoPassingRate,        // even min_rate_rps failed
  kConfirmFailed,        // every confirm failed down to min_rate_rps
  kStepLimit,            // max_steps reached before any confirm passed
  kInsufficientSamples,  // the rates left to try cannot hold min_requests in their windows
};
// "running", "confirmed", "no_passing_rate", "confirm_failed", "step_limit",
// "insufficient_samples".
std::string_view to_string(SearchEnd e);

struct SearchTrial {
  SearchStep step;
  Outcome outcome = Outcome::kInconclusive;
  bool treated_as_fail = false;       // inconclusive after its retries
  bool insufficient_samples = false;  // too few requests in the window (never a fail)
};

struct CapacitySearchResult {
  SearchEnd end = SearchEnd::kRunning;
  std::optional<double> qualified_rate_rps;  // the highest confirmed pass
  std::optional<double> highest_pass_rps;    // best short-step pass seen
  std::optional<double> lowest_fail_rps;     // lowest failing rate (short or confirm)
  // The answer's resolution: the highest confirmed pass and the lowest failing rate above it
  // (nullopt: none failed above it, e.g. at max_rate_rps).
  std::optional<double> bracket_low_rps;
  std::optional<double> bracket_high_rps;
  bool resolution_reached = false;  // bracket narrower than the resolution (or at max rate)
  // The highest rate whose window held too few requests: rates at or below it were not judged.
  std::optional<double> insufficient_samples_at_rps;
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
  // insufficient_samples: the step was inconclusive only because its window held fewer than
  // min_requests (StepVerdict::insufficient_samples).
  void report(double rate_rps, Outcome outcome, bool insufficient_samples = false);
  bool done() const { return result_.end != SearchEnd::kRunning; }
  const CapacitySearchResult& result() const { return result_; }

 private:
  std::optional<SearchStep> plan_next();
  std::optional<double> next_long_rate();
  bool narrow(double lo, double hi) const;
  void finish(SearchEnd end);
  void record_fail(double rate_rps);

  CapacitySearchOptions options_;
  CapacitySearchResult result_;
  std::optional<double> lo_;          // highest short pass (short phase)
  std::optional<double> hi_;          // lowest fail, short or confirm
  std::optional<double> confirmed_;   // highest confirmed pass
  std::optional<double> thin_;        // highest rate judged to hold too few requests
  std::vector<double> short_passes_;  // every passing short step's rate
  bool long_mode_ = false;            // a confirm failed: every step is confirm-length now
  bool confirm_now_ = false;          // the short phase is over: confirm lo_ next
  bool just_below_tried_ = false;
  bool planned_high_tried_ = false;
  bool planned_high_pending_ = false;  // the step asked for is the planned-high one
  double step_factor_ = 2;             // the current bracketing factor (galloping)
  double down_factor_ = 1;             // long mode's step down from the lowest fail
  int direction_ = 0;                  // +1 expanding up, −1 down, 0 not yet
  int retries_used_ = 0;
  std::optional<SearchStep> pending_;
};

}  // namespace llmcap::analysis
