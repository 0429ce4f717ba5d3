// bench_open_loop: the open-loop scheduler at a high offered rate (issue 10). A firehose child
// process answers each request with --tokens events at once; one StepRunner offers --rate
// requests/s (constant and Poisson inter-arrivals) for --seconds. Reports schedule lag
// (t_send − t_intended, docs/metrics.md §1.1), dispatch lag (the same minus connect time), timer
// lag (wake-up − scheduled arrival), and the achieved send rate in the window against the offered
// one.
// Targets: 5,000 requests/s with schedule lag P99 ≤ 1 ms and achieved rate within 1 %.
// Usage: bench_open_loop [--rate=5000] [--seconds=10] [--tokens=4] [--repeat=3]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "agent/step_runner.h"
#include "bench/bench_support.h"

namespace {
using namespace llmcap;

struct Run {
  double achieved_rps = 0, rate_error_pct = 0, intended_rps = 0;
  double sched_p50_us = 0, sched_p99_us = 0, sched_max_us = 0;
  double dispatch_p99_us = 0, timer_p99_us = 0;
  double utilisation = 0;
  std::uint64_t dropped = 0, failed = 0, connections = 0;
};
}  // namespace

int main(int argc, char** argv) {
  bench::BenchFlags flags(argc, argv);
  const double rate = flags.number("rate", 5000);
  const double seconds = flags.number("seconds", 10);
  const int tokens = static_cast<int>(flags.number("tokens", 4));
  const int repeat = static_cast<int>(flags.number("repeat", 3));
  flags.check_all_used();
  bench::raise_nofile(20'000);

  bench::FirehoseOptions fo;
  bench::ForkedServer server;
  server.start([&](int fd) { bench::serve_firehose(fo, fd); });

  std::printf(
      "bench_open_loop: offered %.0f req/s, %.0f s window (+1 s warm-up), %d tokens per "
      "request, %d run(s) per arrival process\n",
      rate, seconds, tokens, repeat);
  std::printf(
      "| arrivals | run | achieved req/s | error %% | sched lag P50 us | P99 us | max us | "
      "dispatch P99 us | timer P99 us | agent util | dropped | failed | connections |\n");
  for (const auto kind : {agent::InterArrival::kConstant, agent::InterArrival::kPoisson}) {
    std::vector<double> p99s, errs;
    for (int i = 0; i < repeat; ++i) {
      auto spec = bench::local_step(server.port(), 1, 16, tokens, seconds);
      spec.load.kind = agent::LoadKind::kOpen;
      spec.load.rate = agent::RateProfile::constant(rate);
      spec.load.inter_arrival = kind;
      spec.load.in_flight_cap = 10'000;
      spec.warmup_s = 1;  // connection pool warm before the window
      spec.drain = agent::DrainPolicy::kWait;
      spec.drain_timeout_s = 10;
      spec.seed = static_cast<std::uint64_t>(i + 1);
      agent::StepRunner runner;
      const auto r = runner.run(spec);
      if (!r.fatal_error.empty()) {
        std::cerr << "step failed: " << r.fatal_error << "\n";
        return 1;
      }
      Run run;
      std::uint64_t sent_in_window = 0, intended_in_window = 0;
      for (const auto& s : r.samples) {
        if (s.t_intended_ns >= r.window_start_ns && s.t_intended_ns < r.window_end_ns)
          ++intended_in_window;
        if (s.t_send_ns >= r.window_start_ns && s.t_send_ns < r.window_end_ns) ++sent_in_window;
        if (!s.ok() && s.error != analysis::ErrorClass::kCancelled) ++run.failed;
      }
      const double window_s = static_cast<double>(r.window_end_ns - r.window_start_ns) / 1e9;
      run.achieved_rps = static_cast<double>(sent_in_window) / window_s;
      run.intended_rps = static_cast<double>(intended_in_window) / window_s;
      run.rate_error_pct = (run.achieved_rps - rate) / rate * 100;
      run.sched_p50_us = static_cast<double>(r.schedule_lag.p50_ns) / 1e3;
      run.sched_p99_us = static_cast<double>(r.schedule_lag.p99_ns) / 1e3;
      run.sched_max_us = static_cast<double>(r.schedule_lag.max_ns) / 1e3;
      run.dispatch_p99_us = static_cast<double>(r.dispatch_lag.p99_ns) / 1e3;
      run.timer_p99_us = static_cast<double>(r.timer_lag.p99_ns) / 1e3;
      run.utilisation = r.cpu.thread_utilisation();
      run.dropped = r.dropped_arrivals;
      run.connections = r.connections_opened;
      p99s.push_back(run.sched_p99_us);
      errs.push_back(run.rate_error_pct);
      std::printf(
          "| %s | %d | %.1f | %+.2f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %llu | %llu | %llu "
          "|\n",
          std::string(agent::to_string(kind)).c_str(), i + 1, run.achieved_rps, run.rate_error_pct,
          run.sched_p50_us, run.sched_p99_us, run.sched_max_us, run.dispatch_p99_us,
          run.timer_p99_us, run.utilisation, static_cast<unsigned long long>(run.dropped),
          static_cast<unsigned long long>(run.failed),
          static_cast<unsigned long long>(run.connections));
    }
    std::printf("| %s | median | | %+.2f | | %.1f | | | | | | | |\n",
                std::string(agent::to_string(kind)).c_str(), bench::median(errs),
                bench::median(p99s));
  }
  server.stop();
  std::printf(
      "targets: schedule lag P99 <= 1000 us; |achieved - offered| <= 1 %% (Poisson: the "
      "count itself varies by 1/sqrt(rate x seconds))\n");
  return 0;
}
