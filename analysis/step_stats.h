// StepStats: everything measured about one load step, computed from the agent's raw samples
// (docs/metrics.md §2, §3). Pure function of its input; the verdict (verdict.h) is judged from
// the result.
//
// Choices (normative for llmcap reports):
// * Window: [window_start_ns, window_end_ns), after warm-up and before drain, same clock as
//   the samples. A request BELONGS to the window when t_intended ∈ [start, end). Counts,
//   latency summaries, error rate, goodput and SLA attainment use the requests that belong.
// * Outcome of a belonging request:
//     completed_ok — ok() and t_end_ns ≥ 0;
//     incomplete  — ok() but t_end_ns < 0 (still running when the step ended), or cancelled by
//                   us (ErrorClass::kCancelled, drain at step end). Reported, never dropped;
//                   they count as SLA misses;
//     timed_out   — any kTimeout* class;
//     abandoned   — ErrorClass::kAbandoned: the plan's simulated user gave up on it
//                   (workload.abandon, chosen at random, independently of the target). Counted,
//                   never an error and never incomplete; left out of every latency summary and
//                   of goodput and SLA attainment (which ask whether a user who waited for the
//                   whole answer got it in time), so the summaries cover an unbiased random
//                   subset of the users who stayed; `abandoned_with_first_token` says how many
//                   had seen a first token;
//     client_resources — ErrorClass::kClientResources: the load generator had no descriptor,
//                   local port or socket memory for it, so it never reached the target. The
//                   client's failure: never in `failed` nor in the error rate (numerator or
//                   base); any such request in the step (window or not) makes the step
//                   inconclusive (verdict.h, client_resources);
//     failed      — every other error class.
//   errors_by_class counts all non-kNone classes (incl. timeouts, cancelled, abandoned and
//   client-resources).
// * Latency summaries (TTFT, TTFT-service, TPOT, E2E) cover completed_ok requests only, so
//   errors do not pollute them (docs/metrics.md §2.3). Schedule lag covers every sent request.
//   All latencies are in ns.
// * Client saturation (verdict.h) is judged on the requests that belong, from their DISPATCH
//   lag: t_send − t_intended − connect − TLS (connection set-up is the network's and the
//   server's accept queue's, not the client's), in WALL-CLOCK time: the samples of a simulated
//   target run time_scale× faster and are scaled back × time_scale before analysis, so the lag
//   is divided by time_scale again (a 3 ms hiccup stays 3 ms). schedule_lag_p99_ns is that P99;
//   client_lag_max_ns the largest dispatch lag in the samples' own (scaled-back) time, which is
//   how much the client's delay can have added to any one measured latency.
// * ITL: quantiles of the pooled histogram the agent recorded (every gap, docs/metrics.md §3.1).
// * Throughput (docs/metrics.md §3.2): over ALL samples ("tokens whose events fall in the
//   window"), not only the belonging ones, counting only successful requests. A request's
//   output tokens are spread over its token events: with token_times_ns recorded (one per
//   event), each event carries output_tokens / events; otherwise the tokens are apportioned
//   UNIFORMLY over [t_first_token, t_last_token] and the part overlapping the window counts
//   (all at once when first == last). Input tokens count at the first token event (prefill
//   done then); requests without usage.prompt_tokens contribute none. requests_per_s = successful
//   requests whose end (last token, else t_end) lies in the window / window length.
//   completion_rate_rps counts every finished request (ok or error, not cancelled) likewise.
//   settled_completion_rate_rps counts them only after the window's first fill_s = min(mean
//   E2E, half the window): a step starts empty, and while its first requests are still running
//   fewer end than start, however well the server keeps up (requests that live 30 s in a 45 s
//   window end at 3/4 of the offered rate). The completion_rate check reads this one against
//   settled_intended, the requests intended over the same span (the draw's own arrivals, not
//   the offered rate's expectation): what ended falls short of what arrived by the growth of
//   the in-flight count, which an overloaded server shows in any part of the window.
// * achieved_rate_rps = requests whose t_send lies in the window / window length.
// * goodput_rps = successful requests that ENDED in the window (the requests requests_per_s
//   counts) and met every per-request SLO (sla.h meets_slos) / window length, so goodput ≤
//   throughput always; sla_attainment = met_slo (the BELONGING requests that met every SLO) /
//   (belonging requests − abandoned + dropped
//   arrivals): errors, timeouts, incomplete and dropped arrivals are misses (docs/metrics.md
//   §3.3).
// * error_rate = (failed + timed_out) / (intended − client_resources); incomplete_rate =
//   incomplete / (intended − client_resources): the target's rates over the requests that could
//   reach it (abandoned requests are in the base but in neither numerator).
// * in_flight_slope_rps: least-squares slope of the in-flight points inside the window after
//   its first mean E2E (the queue's fill from empty; at most half the window), in requests per
//   second, with its autocorrelation-corrected standard error (in_flight_trend); nullopt with
//   fewer than 2 points at distinct times.
// * short_output_share: among completed_ok belonging requests with a planned output length,
//   the share whose output_tokens < planned (servers not honouring max_tokens/ignore_eos,
//   docs/metrics.md §9.2); warn above kShortOutputWarnShare.
//
// Fails by throwing std::invalid_argument only for a broken input invariant (window end ≤
// start). Pure function; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/log_histogram.h"
#include "analysis/request_sample.h"
#include "analysis/sla.h"
#include "analysis/summary.h"

namespace llmcap::analysis {

inline constexpr double kShortOutputWarnShare = 0.01;

struct InFlightPoint {
  std::int64_t t_ns = 0;
  double in_flight = 0;
};

struct StepInput {
  std::span<const RequestSample> samples;  // not owned; must outlive the call
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  double offered_rate_rps = 0;         // open loop; 0 for closed loop
  std::int32_t concurrency = 0;        // closed loop; 0 for open loop
  LogHistogram itl_ns;                 // pooled ITL gaps of the step (docs/metrics.md §1.4)
  std::uint64_t dropped_arrivals = 0;  // arrivals not sent because the in-flight cap was hit
  std::optional<double> client_cpu_utilisation;  // 0..1 of the cores the agent used
  // Samples of simulated targets ran this many times faster than the times they carry (the
  // executor scaled them back); wall-clock figures divide by it. 1 for real targets.
  double time_scale = 1;
  // Simulated targets: wall-clock time the simulator's loop gave up during the step because the
  // host could not keep it in real time (sim::SimServer::clock_lost_ns); nullopt otherwise.
  std::optional<double> target_clock_lost_ns;
  // ... over this much wall-clock time (the whole step, warm-up and drain included, as the
  // simulator's counter cannot tell them apart); 0 = the window's wall length.
  double target_clock_span_ns = 0;
  SlaSpec sla;                           // for goodput / attainment
  std::vector<InFlightPoint> in_flight;  // sampled by the agent
};

// Quantiles of the pooled ITL histogram (within LogHistogram::kRelativeError), in ns.
struct HistogramQuantiles {
  std::uint64_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double p999 = 0;
  std::vector<std::pair<double, double>> extra;  // like Summary::extra
  std::optional<double> at(double p) const;      // like Summary::at
};
HistogramQuantiles quantiles_of(const LogHistogram& h, const std::vector<double>& extra = {});

struct StepStats {
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  double window_s = 0;
  double offered_rate_rps = 0;
  std::int32_t concurrency = 0;

  // Counts over requests intended in the window.
  std::uint64_t intended = 0;
  std::uint64_t sent = 0;
  std::uint64_t completed_ok = 0;
  std::uint64_t failed = 0;  // errors other than timeouts and cancellation
  std::uint64_t timed_out = 0;
  std::uint64_t incomplete = 0;  // still running at step end, or cancelled by the drain
  std::uint64_t abandoned = 0;   // given up on by the plan's simulated user (workload.abandon)
  std::uint64_t abandoned_with_first_token = 0;  // ... after its first token event had arrived
  std::uint64_t dropped_arrivals = 0;
  std::uint64_t client_resources = 0;  // failed for the client's own resources (never `failed`)
  // ... among all the step's samples (warm-up and drain included), and the first one's message
  // (it names the errno and what to change): what the client_resources check judges.
  std::uint64_t client_resources_in_step = 0;
  std::string client_resources_example;
  std::array<std::uint64_t, kErrorClassCount> errors_by_class{};  // index: ErrorClass value
  std::uint64_t met_slo = 0;  // completed and met every per-request SLO
  // Successful requests that ended in the window and met every SLO (goodput's numerator).
  std::uint64_t met_slo_ended = 0;

  Summary ttft_ns;          // from t_intended
  Summary ttft_service_ns;  // from t_send
  Summary tpot_ns;
  Summary e2e_ns;
  Summary schedule_lag_ns;
  HistogramQuantiles itl_ns;
  Summary input_tokens;   // per completed request, where usage gave them
  Summary output_tokens;  // per completed request

  double output_tokens_per_s = 0;
  double input_tokens_per_s = 0;
  double requests_per_s = 0;               // successful completions in the window
  double completion_rate_rps = 0;          // all finished requests (ok or error) in the window
  double settled_completion_rate_rps = 0;  // the same after the window's first fill_s
  std::uint64_t settled_intended = 0;      // requests intended in that settled span
  double fill_s = 0;                       // min(mean E2E, window_s / 2)
  double achieved_rate_rps = 0;            // sends in the window
  double goodput_rps = 0;
  double sla_attainment = 0;  // 0 when nothing was intended
  double error_rate = 0;      // 0 when nothing was intended
  double incomplete_rate = 0;
  std::optional<double> in_flight_slope_rps;
  // Standard error of that slope, corrected for the series' autocorrelation (see
  // in_flight_trend below); nullopt with fewer than 8 points.
  // ... and how many batch means it came from (the significance test's degrees of freedom + 2).
  std::optional<double> in_flight_slope_se_rps;
  std::size_t in_flight_slope_batches = 0;
  // How far the in-flight count wanders around that trend (standard deviation of the points
  // around the line, after fill_s); nullopt with fewer than 2 points.
  std::optional<double> in_flight_wander;

  double short_output_share = 0;
  bool short_output_warning = false;
  std::uint64_t estimated_output_count = 0;  // completed requests whose count is estimated

  std::optional<double> client_cpu_utilisation;
  // P99 dispatch lag of the belonging sent requests, wall-clock ns (see above); nullopt when
  // none was sent. What the verdict's schedule_lag check judges.
  std::optional<double> schedule_lag_p99_ns;
  // Largest dispatch lag of a belonging request, in the samples' time (× time_scale): the most
  // the client's own delay can have added to a latency measured from t_intended. 0 when none.
  double client_lag_max_ns = 0;
  // The simulated target's lost wall-clock time as a share of the wall-clock time it was
  // measured over (StepInput::target_clock_span_ns); nullopt for real targets.
  std::optional<double> target_clock_lost_share;
};

StepStats compute_step_stats(const StepInput& input);

// Least-squares slope of in_flight over t_ns for points in [start_ns, end_ns), in requests/s.
std::optional<double> in_flight_slope_rps(const std::vector<InFlightPoint>& points,
                                          std::int64_t start_ns, std::int64_t end_ns);

// The slope with its standard error. A stationary queue's in-flight count is autocorrelated
// over about one request lifetime, so the ordinary least-squares error over the samples (which
// assumes independent residuals) understates the slope's noise many times over. The error comes
// from batch means instead: the span is cut into kTrendBatches equal batches, and se is the
// least-squares standard error of the slope over the batches' mean counts (df = batches − 2).
// Batches shorter than a request lifetime are still correlated, so se can understate the
// noise; the backlog check's threshold (verdict.h, kBacklogSignificance) leaves room for that.
// (Fewer batches when requests live long were tried and dropped: under overload the mean E2E
// grows without bound, and the check went blind exactly there.) se is nullopt with fewer than
// 2 × kTrendBatches points or fewer than 4 non-empty batches.
inline constexpr std::size_t kTrendBatches = 10;
struct InFlightTrend {
  double slope_rps = 0;  // least squares over every point
  std::optional<double> se_rps;
  std::size_t batches = 0;  // the batches se came from (0 without se)
  double residual_sd = 0;   // of the points around the least-squares line
};
std::optional<InFlightTrend> in_flight_trend(const std::vector<InFlightPoint>& points,
                                             std::int64_t start_ns, std::int64_t end_ns);

// Output tokens of one request counted inside [start_ns, end_ns) (apportioning rule above).
double output_tokens_in_window(const RequestSample& sample, std::int64_t start_ns,
                               std::int64_t end_ns);

}  // namespace llmcap::analysis
