#include "analysis/step_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include <stdexcept>

#include "analysis/verdict.h"
#include "tests/unit/analysis/test_samples.h"

namespace llmcap::analysis {
namespace {

using testing::kMs;
using testing::kSec;

// Open loop, 10 rps for 80 s: one request every 100 ms, 1 ms send lag, 200 ms service TTFT,
// 101 tokens 10 ms apart (last token 1 s after the first). Window [10 s, 70 s).
std::vector<RequestSample> steady_samples() {
  std::vector<RequestSample> v;
  for (int k = 0; k < 800; ++k) v.push_back(testing::ok_sample(k, k * 100 * kMs, 200 * kMs));
  return v;
}

StepInput steady_input(const std::vector<RequestSample>& samples) {
  StepInput in;
  in.samples = samples;
  in.window_start_ns = 10 * kSec;
  in.window_end_ns = 70 * kSec;
  in.offered_rate_rps = 10;
  return in;
}

TEST(StepStats, SteadyStreamRatesAndLatencies) {
  const auto samples = steady_samples();
  const StepStats st = compute_step_stats(steady_input(samples));
  EXPECT_DOUBLE_EQ(st.window_s, 60);
  EXPECT_EQ(st.intended, 600u);  // k = 100 .. 699
  EXPECT_EQ(st.sent, 600u);
  EXPECT_EQ(st.completed_ok, 600u);
  EXPECT_EQ(st.failed + st.timed_out + st.incomplete, 0u);
  // 10 requests always active × 101 tokens per second each.
  EXPECT_NEAR(st.output_tokens_per_s, 1010, 1e-6);
  EXPECT_NEAR(st.input_tokens_per_s, 1000, 1e-9);  // 600 first tokens × 100 / 60 s
  EXPECT_NEAR(st.requests_per_s, 10, 1e-9);
  EXPECT_NEAR(st.completion_rate_rps, 10, 1e-9);
  EXPECT_NEAR(st.achieved_rate_rps, 10, 1e-9);
  EXPECT_DOUBLE_EQ(st.ttft_ns.p95, 201 * kMs);
  EXPECT_DOUBLE_EQ(st.ttft_service_ns.p99, 200 * kMs);
  EXPECT_DOUBLE_EQ(st.tpot_ns.p50, 10 * kMs);
  EXPECT_DOUBLE_EQ(st.e2e_ns.max, 1201 * kMs);
  EXPECT_DOUBLE_EQ(st.schedule_lag_ns.p99, 1 * kMs);
  ASSERT_TRUE(st.schedule_lag_p99_ns.has_value());
  EXPECT_DOUBLE_EQ(*st.schedule_lag_p99_ns, 1 * kMs);
  EXPECT_DOUBLE_EQ(st.error_rate, 0);
  EXPECT_DOUBLE_EQ(st.output_tokens.mean, 101);
  // No SLA bounds: every completed request meets the (empty) SLO set.
  EXPECT_EQ(st.met_slo, 600u);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 1.0);
  EXPECT_DOUBLE_EQ(st.goodput_rps, 10);
}

TEST(StepStats, AbandonedRequestsAreTheirOwnClass) {
  // Every 10th request is abandoned by its user: 5 after their 20th token (the last 81 of 101
  // tokens never came), 5 before the first token. They are counted apart, are neither errors
  // nor incomplete, and leave the latency summaries, goodput and attainment of the users who
  // stayed exactly as they were.
  auto samples = steady_samples();
  int with_token = 0;
  for (std::size_t k = 100; k < 700; k += 10) {
    RequestSample& s = samples[k];
    s.error = ErrorClass::kAbandoned;
    s.error_message = "abandoned by the client";
    if (with_token++ % 2 == 0) {
      s.t_last_token_ns = s.t_first_token_ns + 19 * 10 * kMs;
      s.t_end_ns = s.t_last_token_ns;
      s.token_events = 20;
      s.output_tokens = 20;
      s.output_tokens_estimated = true;
    } else {
      s.t_first_token_ns = s.t_last_token_ns = -1;
      s.t_end_ns = s.t_send_ns + 150 * kMs;
      s.token_events = 0;
      s.output_tokens = 0;
    }
  }
  const StepStats st = compute_step_stats(steady_input(samples));
  EXPECT_EQ(st.intended, 600u);
  EXPECT_EQ(st.abandoned, 60u);
  EXPECT_EQ(st.abandoned_with_first_token, 30u);
  EXPECT_EQ(st.completed_ok, 540u);
  EXPECT_EQ(st.failed + st.timed_out + st.incomplete, 0u);
  EXPECT_EQ(st.errors_by_class[static_cast<std::size_t>(ErrorClass::kAbandoned)], 60u);
  EXPECT_DOUBLE_EQ(st.error_rate, 0);
  EXPECT_DOUBLE_EQ(st.incomplete_rate, 0);
  EXPECT_EQ(st.e2e_ns.count, 540u);
  EXPECT_EQ(st.ttft_ns.count, 540u);
  EXPECT_EQ(st.tpot_ns.count, 540u);
  EXPECT_DOUBLE_EQ(st.e2e_ns.max, 1201 * kMs);  // no abandoned request's shorter E2E
  EXPECT_EQ(st.met_slo, 540u);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 1.0);  // of the users who waited for the whole answer
  // An abandoned request left the server: it finished (completion rate), but not successfully.
  EXPECT_NEAR(st.completion_rate_rps, 10, 0.05);
  EXPECT_NEAR(st.requests_per_s, 9, 0.05);
  EXPECT_EQ(to_string(ErrorClass::kAbandoned), "abandoned");
  EXPECT_EQ(parse_error_class("abandoned"), ErrorClass::kAbandoned);
  EXPECT_EQ(error_class_from(static_cast<int>(ErrorClass::kAbandoned)), ErrorClass::kAbandoned);
}

TEST(StepStats, OutcomesAreCountedSeparately) {
  auto samples = steady_samples();
  for (auto& s : samples) {
    if (s.index < 100 || s.index >= 700) continue;
    const auto k = s.index % 50;
    const auto t = s.t_intended_ns;
    if (k == 0) s = testing::failed_sample(s.index, t, ErrorClass::kHttp5xx);
    if (k == 1) s = testing::failed_sample(s.index, t, ErrorClass::kTimeoutFirstToken);
    if (k == 2) s = testing::failed_sample(s.index, t, ErrorClass::kCancelled);
    if (k == 3) s.t_end_ns = -1;  // still running at step end
    if (k == 4) s = testing::failed_sample(s.index, t, ErrorClass::kHttp429);
  }
  const StepStats st = compute_step_stats(steady_input(samples));
  EXPECT_EQ(st.intended, 600u);
  EXPECT_EQ(st.failed, 24u);  // 12 × 5xx + 12 × 429
  EXPECT_EQ(st.timed_out, 12u);
  EXPECT_EQ(st.incomplete, 24u);  // 12 cancelled + 12 unfinished
  EXPECT_EQ(st.completed_ok, 540u);
  EXPECT_EQ(st.errors_by_class[static_cast<int>(ErrorClass::kHttp5xx)], 12u);
  EXPECT_EQ(st.errors_by_class[static_cast<int>(ErrorClass::kHttp429)], 12u);
  EXPECT_EQ(st.errors_by_class[static_cast<int>(ErrorClass::kTimeoutFirstToken)], 12u);
  EXPECT_EQ(st.errors_by_class[static_cast<int>(ErrorClass::kCancelled)], 12u);
  EXPECT_DOUBLE_EQ(st.error_rate, 36.0 / 600);
  EXPECT_DOUBLE_EQ(st.incomplete_rate, 24.0 / 600);
  EXPECT_EQ(st.ttft_ns.count, 540u);  // latency over successful requests only
  EXPECT_EQ(st.met_slo, 540u);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 540.0 / 600);
}

TEST(StepStats, ClientResourceFailuresAreTheClientsNotTheTargetsErrors) {
  // Issue 35 #5: 60 requests of the window and 5 of the warm-up found no descriptor on the
  // client. They are counted apart, never in `failed` or the error rate (nor its base), and
  // the step remembers the first message for the verdict's client_resources reason.
  auto samples = steady_samples();
  const std::string message =
      "client resources exhausted: connect to 127.0.0.1:8000 failed with EMFILE (Too many open "
      "files); raise the agent's descriptor limit (ulimit -n) or lower the concurrency";
  for (auto& s : samples) {
    const bool warmup = s.index >= 50 && s.index < 55;
    const bool window = s.index >= 100 && s.index < 700 && s.index % 10 == 0;
    if (!warmup && !window) continue;
    s = testing::failed_sample(s.index, s.t_intended_ns, ErrorClass::kClientResources);
    s.error_message = message;
  }
  for (std::size_t k = 101; k < 700; k += 100) {
    samples[k] = testing::failed_sample(k, samples[k].t_intended_ns, ErrorClass::kHttp5xx);
  }
  const StepStats st = compute_step_stats(steady_input(samples));
  EXPECT_EQ(st.intended, 600u);
  EXPECT_EQ(st.client_resources, 60u);
  EXPECT_EQ(st.client_resources_in_step, 65u);
  EXPECT_EQ(st.client_resources_example, message);
  EXPECT_EQ(st.failed, 6u);  // the 5xx only
  EXPECT_EQ(st.errors_by_class[static_cast<int>(ErrorClass::kClientResources)], 60u);
  EXPECT_DOUBLE_EQ(st.error_rate, 6.0 / 540);  // over the requests that reached the target
  EXPECT_EQ(to_string(ErrorClass::kClientResources), "client-resources");
  EXPECT_EQ(parse_error_class("client-resources"), ErrorClass::kClientResources);
  EXPECT_EQ(error_class_from(static_cast<int>(ErrorClass::kClientResources)),
            ErrorClass::kClientResources);

  // The verdict: inconclusive and client-bound, its reason naming the count and the errno; the
  // target's error rate (1.1 % > 1 %) is reported but decides nothing.
  SlaSpec sla;
  sla.bounds = {{SlaMetric::kTtft, 95, 1000}};
  const StepVerdict v = judge_step(st, sla);
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  bool found = false;
  for (const auto& r : v.reasons) {
    if (r.code != "client_resources") continue;
    found = true;
    EXPECT_EQ(r.status, CheckStatus::kMissed);
    EXPECT_DOUBLE_EQ(*r.measured, 65);
    EXPECT_NE(r.text.find("client resources exhausted: 65 request(s)"), std::string::npos)
        << r.text;
    EXPECT_NE(r.text.find("EMFILE (Too many open files)"), std::string::npos) << r.text;
  }
  EXPECT_TRUE(found);
}

TEST(StepStats, GoodputAndAttainmentUseTheSla) {
  auto samples = steady_samples();
  for (auto& s : samples) {
    if (s.index % 4 == 0) s = testing::ok_sample(s.index, s.t_intended_ns, 2000 * kMs);
  }
  StepInput in = steady_input(samples);
  in.sla.bounds = {{SlaMetric::kTtft, 95, 1000}};
  in.dropped_arrivals = 0;
  StepStats st = compute_step_stats(in);
  EXPECT_EQ(st.met_slo, 450u);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 0.75);
  EXPECT_DOUBLE_EQ(st.goodput_rps, 7.5);
  // Dropped arrivals were intended too: they are misses.
  in.dropped_arrivals = 150;
  st = compute_step_stats(in);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 450.0 / 750);
  EXPECT_EQ(st.dropped_arrivals, 150u);
}

TEST(StepStats, OutputTokensApportionedUniformly) {
  // 101 tokens over [first, first + 1 s]; the window keeps the last 40% of that span.
  const auto s = testing::ok_sample(0, 0, 200 * kMs);
  const std::int64_t first = s.t_first_token_ns;
  EXPECT_NEAR(output_tokens_in_window(s, first + 600 * kMs, first + 5 * kSec), 40.4, 1e-9);
  EXPECT_NEAR(output_tokens_in_window(s, 0, 100 * kSec), 101, 1e-9);
  EXPECT_DOUBLE_EQ(output_tokens_in_window(s, first + 2 * kSec, first + 3 * kSec), 0);
  // Single event: all or nothing.
  const auto one = testing::ok_sample(0, 0, 200 * kMs, 1);
  EXPECT_DOUBLE_EQ(output_tokens_in_window(one, 0, one.t_first_token_ns + 1), 1);
  EXPECT_DOUBLE_EQ(output_tokens_in_window(one, one.t_first_token_ns + 1, 10 * kSec), 0);
}

TEST(StepStats, OutputTokensFromRecordedEventTimes) {
  // 4 events carrying 8 tokens (2 per event) at 0, 100, 900, 1000 ms: the tokens bunch up
  // at the ends, which the uniform rule would miss.
  RequestSample s = testing::ok_sample(0, 0, 0, 8);
  s.token_events = 4;
  s.token_times_ns = {s.t_first_token_ns, s.t_first_token_ns + 100 * kMs,
                      s.t_first_token_ns + 900 * kMs, s.t_first_token_ns + 1000 * kMs};
  s.t_last_token_ns = s.t_end_ns = s.token_times_ns.back();
  const std::int64_t f = s.t_first_token_ns;
  EXPECT_DOUBLE_EQ(output_tokens_in_window(s, f + 50 * kMs, f + 950 * kMs), 4);
}

TEST(StepStats, InFlightTrendErrorComesFromBatchMeans) {
  // A queue that wanders slowly (a 40 s cycle, 10 samples a second) has no trend: the
  // samples' own least-squares error would call a small slope significant, batch means do not.
  std::vector<InFlightPoint> wander;
  for (int i = 0; i < 3000; ++i)
    wander.push_back({i * 100 * kMs, 20 + 6 * std::sin(i * 0.1 * 2 * M_PI / 40)});
  const auto w = in_flight_trend(wander, 0, 300 * kSec);
  ASSERT_TRUE(w && w->se_rps);
  EXPECT_LT(std::fabs(w->slope_rps), 4.5 * *w->se_rps);
  // Steady growth of 0.5 requests/s with the same wander is far beyond its error.
  std::vector<InFlightPoint> growing = wander;
  for (auto& p : growing) p.in_flight += 0.5 * static_cast<double>(p.t_ns) / 1e9;
  const auto g = in_flight_trend(growing, 0, 300 * kSec);
  ASSERT_TRUE(g && g->se_rps);
  EXPECT_NEAR(g->slope_rps, 0.5, 0.05);
  EXPECT_GT(g->slope_rps, 4.5 * *g->se_rps);
  // Too few points for batches: the slope, no error.
  std::vector<InFlightPoint> few;
  for (int i = 0; i < 10; ++i) few.push_back({i * kSec, 1.0 * i});
  const auto f = in_flight_trend(few, 0, 10 * kSec);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->se_rps.has_value());
}

// The in-flight count of `samples` every 100 ms over [0, end): intended, not yet ended.
std::vector<InFlightPoint> in_flight_of(const std::vector<RequestSample>& samples,
                                        std::int64_t end_ns) {
  std::vector<InFlightPoint> points;
  for (std::int64_t t = 0; t < end_ns; t += 100 * kMs) {
    double n = 0;
    for (const auto& s : samples) n += s.t_intended_ns <= t && s.t_end_ns > t ? 1 : 0;
    points.push_back({t, n});
  }
  return points;
}

// An open-loop step over `samples` (which must outlive it) with their in-flight count.
StepInput open_loop_input(const std::vector<RequestSample>& samples, int start_s, int end_s,
                          double offered_rps) {
  StepInput in;
  in.samples = samples;
  in.window_start_ns = start_s * kSec;
  in.window_end_ns = end_s * kSec;
  in.offered_rate_rps = offered_rps;
  in.in_flight = in_flight_of(samples, 80 * kSec);
  return in;
}

TEST(StepStats, CompletionRateSettlesAfterTheFirstRequestLifetime) {
  // 2 rps from t = 0, each request lives 30 s (3001 tokens 10 ms apart), window [10 s, 70 s):
  // the server keeps up, but requests sent before 0 do not exist, so none ends before 30 s and
  // the window sees 80 ends in 60 s — 2/3 of the offered rate. After the window's first mean
  // E2E (30 s, at most half the window) the completions run at the rate requests arrived.
  std::vector<RequestSample> v;
  for (int k = 0; k < 160; ++k)
    v.push_back(testing::ok_sample(k, k * 500 * kMs, 0, 3001, 10 * kMs, 0));
  const StepStats st = compute_step_stats(open_loop_input(v, 10, 70, 2));
  EXPECT_NEAR(st.completion_rate_rps, 80.0 / 60, 0.02);
  EXPECT_DOUBLE_EQ(st.fill_s, 30);
  EXPECT_NEAR(st.settled_completion_rate_rps, 2, 0.05);
  EXPECT_EQ(st.settled_intended, 60u);  // intended in [40 s, 70 s)
  // The verdict reads the settled rate: the check holds, and says over which span.
  SlaSpec sla;
  sla.min_requests = 10;
  const StepVerdict verdict = judge_step(st, sla);
  int seen = 0;
  for (const auto& r : verdict.reasons) {
    if (r.kind != CheckKind::kCompletionRate) continue;
    ++seen;
    EXPECT_EQ(r.status, CheckStatus::kHeld) << r.text;
    EXPECT_NE(r.text.find("after the window's first 30.0 s"), std::string::npos) << r.text;
  }
  EXPECT_EQ(seen, 1);
  // A server that completes at half the rate requests arrive misses it, whatever the span.
  std::vector<RequestSample> slow;
  for (int k = 0; k < 160; ++k)
    slow.push_back(testing::ok_sample(k, k * 500 * kMs, k * 500 * kMs, 3001, 10 * kMs, 0));
  const StepStats overloaded = compute_step_stats(open_loop_input(slow, 10, 70, 2));
  for (const auto& r : judge_step(overloaded, sla).reasons) {
    if (r.kind == CheckKind::kCompletionRate) {
      EXPECT_EQ(r.status, CheckStatus::kMissed) << r.text;
    }
  }
}

TEST(StepStats, AnOverloadedQueueOfLongLivedRequestsFailsTheBacklogAndCompletionChecks) {
  // 3 rps arrive; the server finishes one request a second (each waits for all before it):
  // E2E grows without bound, past half the window. Both checks that see the growth must miss
  // — the mean E2E must not blind them (an earlier version sized its batches by it, and a
  // twin at 3.1 rps with 180 requests running and 0.4 completions/s passed).
  std::vector<RequestSample> v;
  for (int k = 0; k < 240; ++k) {
    RequestSample s = testing::ok_sample(k, k * 333 * kMs, 0, 2, 10 * kMs, 0);
    s.t_end_ns = s.t_last_token_ns =
        std::max<std::int64_t>(s.t_intended_ns + 20 * kSec, (k + 20) * 1000 * kMs);
    s.t_first_token_ns = s.t_end_ns - 10 * kMs;
    v.push_back(s);
  }
  const StepStats st = compute_step_stats(open_loop_input(v, 5, 68, 3));
  EXPECT_GT(st.e2e_ns.mean, 31.5 * kSec);  // longer than half the window
  SlaSpec sla;
  sla.min_requests = 10;
  int missed = 0;
  for (const auto& r : judge_step(st, sla).reasons) {
    if (r.kind == CheckKind::kBacklog || r.kind == CheckKind::kCompletionRate) {
      EXPECT_EQ(r.status, CheckStatus::kMissed) << r.text;
      ++missed;
    }
  }
  EXPECT_EQ(missed, 2);
  // The threshold: Student's t at one-sided 1e-5 by the batches' degrees of freedom.
  EXPECT_DOUBLE_EQ(backlog_significance(kTrendBatches), kBacklogSignificance);
  EXPECT_NEAR(backlog_significance(5), 47.928, 1e-9);
  EXPECT_GT(backlog_significance(6), backlog_significance(7));
}

TEST(StepStats, InFlightSlope) {
  std::vector<InFlightPoint> pts;
  for (int t = 0; t <= 100; ++t) pts.push_back({t * kSec, 5 + 0.5 * t});
  pts.push_back({500 * kSec, 1e6});  // outside the window: ignored
  ASSERT_TRUE(in_flight_slope_rps(pts, 10 * kSec, 70 * kSec).has_value());
  EXPECT_NEAR(*in_flight_slope_rps(pts, 10 * kSec, 70 * kSec), 0.5, 1e-9);
  EXPECT_FALSE(in_flight_slope_rps(pts, 10 * kSec, 11 * kSec).has_value());  // one point
  EXPECT_FALSE(in_flight_slope_rps({}, 0, kSec).has_value());

  const auto samples = steady_samples();
  StepInput in = steady_input(samples);
  in.in_flight = pts;
  EXPECT_NEAR(*compute_step_stats(in).in_flight_slope_rps, 0.5, 1e-9);
}

TEST(StepStats, ShortOutputShareAndEstimatedCounts) {
  auto samples = steady_samples();
  int shortened = 0;
  for (auto& s : samples) {
    if (s.index >= 100 && s.index < 700 && s.index % 50 == 7) {
      s.planned_output_tokens = 200;  // server stopped early (12 of 600 = 2%)
      ++shortened;
    }
    if (s.index >= 100 && s.index < 700 && s.index % 100 == 9) s.output_tokens_estimated = true;
  }
  StepStats st = compute_step_stats(steady_input(samples));
  EXPECT_EQ(shortened, 12);
  EXPECT_DOUBLE_EQ(st.short_output_share, 0.02);
  EXPECT_TRUE(st.short_output_warning);
  EXPECT_EQ(st.estimated_output_count, 6u);

  samples = steady_samples();
  for (auto& s : samples) {
    if (s.index >= 100 && s.index < 700 && s.index % 200 == 7) s.planned_output_tokens = 200;
  }
  st = compute_step_stats(steady_input(samples));
  EXPECT_DOUBLE_EQ(st.short_output_share, 3.0 / 600);
  EXPECT_FALSE(st.short_output_warning);
}

TEST(StepStats, ClientLagIsTheWindowsDispatchLagInWallClockTime) {
  auto samples = steady_samples();
  // Warm-up requests (index < 100) waited 900 ms, and the first window request spent 400 ms
  // connecting: neither is the client's own delay within the window.
  for (auto& s : samples) {
    if (s.index < 100) s.t_send_ns = s.t_intended_ns + 900 * kMs;
  }
  samples[100].connect_ns = 400 * kMs;
  samples[100].t_send_ns = samples[100].t_intended_ns + 401 * kMs;
  StepInput in = steady_input(samples);
  StepStats st = compute_step_stats(in);
  ASSERT_TRUE(st.schedule_lag_p99_ns.has_value());
  EXPECT_DOUBLE_EQ(*st.schedule_lag_p99_ns, 1 * kMs);
  EXPECT_DOUBLE_EQ(st.client_lag_max_ns, 1 * kMs);
  // Samples of a simulator at time_scale 20 were scaled back × 20: the wall-clock lag is ÷ 20,
  // while the most it can have added to a (scaled) latency stays in the samples' time.
  in.time_scale = 20;
  st = compute_step_stats(in);
  EXPECT_DOUBLE_EQ(*st.schedule_lag_p99_ns, 1 * kMs / 20);
  EXPECT_DOUBLE_EQ(st.client_lag_max_ns, 1 * kMs);
}

TEST(StepStats, ClientFiguresAndItl) {
  const auto samples = steady_samples();
  StepInput in = steady_input(samples);
  in.client_cpu_utilisation = 0.42;
  for (int i = 1; i <= 1000; ++i) in.itl_ns.record(i * 1e5);  // 0.1 .. 100 ms
  const StepStats st = compute_step_stats(in);
  EXPECT_DOUBLE_EQ(*st.schedule_lag_p99_ns, 1.0 * kMs);
  EXPECT_DOUBLE_EQ(*st.client_cpu_utilisation, 0.42);
  EXPECT_EQ(st.itl_ns.count, 1000u);
  EXPECT_NEAR(st.itl_ns.p50, 50e6, 50e6 * 0.01);
  EXPECT_NEAR(st.itl_ns.p99, 99e6, 99e6 * 0.01);
  EXPECT_NEAR(*st.itl_ns.at(95), 95e6, 95e6 * 0.01);
  EXPECT_DOUBLE_EQ(st.itl_ns.max, 100e6);
}

TEST(StepStats, EmptyWindowAndBadWindow) {
  const std::vector<RequestSample> none;
  StepInput in;
  in.samples = none;
  in.window_start_ns = 0;
  in.window_end_ns = kSec;
  const StepStats st = compute_step_stats(in);
  EXPECT_EQ(st.intended, 0u);
  EXPECT_DOUBLE_EQ(st.error_rate, 0);
  EXPECT_DOUBLE_EQ(st.sla_attainment, 0);
  EXPECT_FALSE(st.schedule_lag_p99_ns.has_value());
  in.window_end_ns = 0;
  EXPECT_THROW(compute_step_stats(in), std::invalid_argument);
}

TEST(StepStats, PercentilesAnSlaAsksForAreComputedAndJudged) {
  // Issue 22: a bound on P75 or P99.99 is judged on that very percentile. Service TTFT grows
  // 1 ms per request (k ms for request k, intended ones k = 100..699), so TTFT from intended
  // (1 ms send lag) is 101..700 ms and P75 = 101 + 0.75 × 599 = 550.25 ms.
  std::vector<RequestSample> samples;
  for (int k = 0; k < 800; ++k)
    samples.push_back(testing::ok_sample(k, k * 100 * kMs, static_cast<std::int64_t>(k) * kMs));
  StepInput in = steady_input(samples);
  in.sla.bounds = {
      {SlaMetric::kTtft, 75, 560}, {SlaMetric::kTtft, 99.99, 800}, {SlaMetric::kE2e, 75, 1}};
  for (int i = 1; i <= 100; ++i) in.itl_ns.record(i * kMs);
  const StepStats st = compute_step_stats(in);
  ASSERT_TRUE(st.ttft_ns.at(75).has_value());
  EXPECT_NEAR(*st.ttft_ns.at(75), 550.25 * kMs, 1e-3);
  ASSERT_TRUE(st.ttft_ns.at(99.99).has_value());
  EXPECT_NEAR(*st.ttft_ns.at(99.99), (101 + 0.9999 * 599) * kMs, 1e-3);
  EXPECT_TRUE(st.e2e_ns.at(75).has_value());
  ASSERT_TRUE(st.itl_ns.at(75).has_value());
  EXPECT_NEAR(*st.itl_ns.at(75), 75 * kMs, 0.02 * 75 * kMs);  // the histogram's 1% (+ rank)
  EXPECT_FALSE(st.ttft_ns.at(80).has_value());                // not asked for
  const StepVerdict v = judge_step(st, in.sla);
  EXPECT_EQ(v.outcome, Outcome::kFail);  // the E2E P75 bound of 1 ms cannot hold
  int held = 0, missed = 0;
  for (const auto& r : v.reasons) {
    if (r.code == "ttft_p75" || r.code == "ttft_p99.99") held += r.status == CheckStatus::kHeld;
    if (r.code == "e2e_p75") missed += r.status == CheckStatus::kMissed;
  }
  EXPECT_EQ(held, 2);
  EXPECT_EQ(missed, 1);
}

}  // namespace
}  // namespace llmcap::analysis
