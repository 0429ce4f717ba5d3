// bench_concurrency: many simultaneous paced streams (issue 10). A firehose child process in
// paced mode sends one token event per stream every --interval-ms on absolute deadlines, so
// the true inter-token latency is exactly the interval; one StepRunner holds --streams
// requests in flight (closed loop) and its pooled ITL histogram (docs/metrics.md §3.1) is
// compared with the truth. Also reports the agent's memory per in-flight request: peak RSS while
// all streams are open minus RSS before the step, divided by the stream count (this includes the
// StepResult's growing sample vector; per-token timestamps are off).
// Targets: 10,000 streams held; ITL P99 within 1 ms of truth; ≤ 16 KiB per in-flight request.
// Usage: bench_concurrency [--streams=10000] [--interval-ms=50] [--tokens=100] [--seconds=10]
//                          [--repeat=1] [--token-times=1] [--server=asio|raw] [--shards=1]
//                          [--phases=aligned|spread] [--timeline=0|1] [--length-spread=0]
//                          [--tail-delay-ms=0]
// "agent util" is the sum over shards of each agent I/O thread's CPU / wall time (cores).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "agent/step_runner.h"
#include "bench/bench_support.h"
#include "bench/paced_server.h"

namespace {
using namespace llmcap;

struct Run {
  std::int64_t held = 0;  // most requests in flight at once
  double itl_p50_ms = 0, itl_p99_ms = 0, itl_p999_ms = 0, itl_p1_ms = 0, itl_max_ms = 0;
  double err_p99_ms = 0;  // max(|P99 − truth|, |P1 − truth|)
  double kib_per_request = 0;
  double utilisation = 0;
  std::uint64_t gaps = 0, ok = 0, failed = 0, cancelled = 0;
  std::uint64_t connections_opened = 0;  // all shards
  std::uint64_t token_events = 0;        // received, all requests of all shards
  double schedule_lag_p99_ms = 0;        // worst shard: what the step's client-side check judges
  std::int64_t preemptions = 0;
  std::string first_error;
};
}  // namespace

int main(int argc, char** argv) {
  bench::BenchFlags flags(argc, argv);
  const int streams = static_cast<int>(flags.number("streams", 10'000));
  const int interval_ms = static_cast<int>(flags.number("interval-ms", 50));
  const int tokens = static_cast<int>(flags.number("tokens", 100));
  const double seconds = flags.number("seconds", 10);
  const int repeat = static_cast<int>(flags.number("repeat", 1));
  // 1: record every token's arrival (StepSpec::record_token_times) and take exact gap
  // quantiles; 0: the pooled LogHistogram (±1 % relative = ±0.5 ms at 50 ms) and a memory
  // figure free of per-token timestamps.
  const bool token_times = flags.number("token-times", 1) != 0;
  // The paced server: "asio" (bench::FirehoseServer's paced mode, ≈ 10 µs of its CPU per
  // event) or "raw" (bench::serve_paced_raw: one epoll thread, one send per event), whose
  // truth holds at higher counts.
  const std::string server_kind = flags.text("server", "asio");
  // raw server only: "aligned" (first token exactly one interval after the headers, so streams
  // started together emit together, as one continuous batch would) or "spread" (first token
  // after a further U[0, interval): the same event rate, evenly over time).
  const std::string phases = flags.text("phases", "aligned");
  // Agent shards: StepRunners on their own threads, streams split evenly between them.
  const int shards = static_cast<int>(flags.number("shards", 1));
  // 1: also print, per 100 ms of the run, the worst lateness of a token against its stream's
  // own pace (t_k − t_0 − k × interval), to tell a client stall (one bad 100 ms) from a
  // steady backlog (every bin late). Needs --token-times=1.
  const bool timeline = flags.number("timeline", 0) != 0;
  // > 0: output lengths uniform in [tokens − spread, tokens + spread] instead of fixed, so the
  // streams' requests, all started at once, do not all end (and restart) in the same instant.
  const int length_spread = static_cast<int>(flags.number("length-spread", 0));
  // raw server only: > 0 sends each answer's [DONE] and end of body this long after its finish
  // and usage events (FirehoseOptions::tail_delay_ms; 50 lines it up with the client's grace,
  // issue 36).
  const int tail_delay_ms = static_cast<int>(flags.number("tail-delay-ms", 0));
  flags.check_all_used();
  if (!bench::paced_server_flags_ok(server_kind, phases)) return 2;
  if (tail_delay_ms < 0 || (tail_delay_ms > 0 && server_kind != "raw")) {
    std::cerr << "--tail-delay-ms: must be >= 0, and needs --server=raw\n";
    return 2;
  }
  if (length_spread < 0 || length_spread >= tokens) {
    std::cerr << "--length-spread: must be between 0 and --tokens - 1\n";
    return 2;
  }
  if (shards < 1 || shards > streams) {
    std::cerr << "--shards: must be between 1 and --streams\n";
    return 2;
  }

  const std::int64_t nofile = bench::raise_nofile(static_cast<std::int64_t>(streams) * 2 + 256);
  if (nofile < streams + 64) {
    std::cerr << "RLIMIT_NOFILE is " << nofile << ", too low for " << streams
              << " streams (raise the hard limit: ulimit -Hn)\n";
    return 2;
  }
  bench::FirehoseOptions fo;
  fo.interval_ms = interval_ms;
  // Twice the streams: a client that closes connections (its grace ran out under
  // --tail-delay-ms) reconnects before this server has read their EOF, and a refused connect is a
  // reset the client counts as an error.
  fo.max_connections = static_cast<std::size_t>(streams) * 2 + 64;
  fo.spread_phases = phases == "spread";
  fo.tail_delay_ms = tail_delay_ms;
  bench::ForkedServer server;
  server.start([&](int fd) {
    if (server_kind == "raw")
      bench::serve_paced_raw(fo, fd);
    else
      bench::serve_firehose(fo, fd);
  });

  std::vector<Run> runs;
  for (int i = 0; i < repeat; ++i) {
    // Shard k holds streams / shards (the first ones one more for a remainder), each on its own
    // StepRunner and thread: the in-process form of a plan's `agents.count` scale-out.
    std::vector<agent::StepSpec> specs;
    for (int k = 0; k < shards; ++k) {
      const int n = streams / shards + (k < streams % shards ? 1 : 0);
      auto spec = bench::local_step(server.port(), n, 16, tokens, seconds);
      spec.drain = agent::DrainPolicy::kWait;
      spec.drain_timeout_s = static_cast<double>(tokens) * interval_ms / 1000.0 + 30;
      spec.load.in_flight_cap = n;
      spec.record_token_times = token_times;
      spec.seed = static_cast<std::uint64_t>(k + 1);
      if (length_spread > 0) {
        auto& out = spec.workload.output_tokens;
        out.kind = analysis::LengthDistribution::Kind::kUniform;
        out.low = std::max(1, tokens - length_spread);
        out.high = tokens + length_spread;
      }
      specs.push_back(spec);
    }
    const std::int64_t rss0 = bench::rss_kib();
    std::atomic<std::int64_t> rss_peak{rss0};
    std::vector<std::atomic<std::int64_t>> in_flight(static_cast<std::size_t>(shards));
    std::vector<std::int64_t> held(static_cast<std::size_t>(shards), 0);
    std::vector<agent::StepResult> results(static_cast<std::size_t>(shards));
    {
      std::vector<std::thread> threads;
      for (int k = 0; k < shards; ++k)
        threads.emplace_back([&, k] {
          const auto ks = static_cast<std::size_t>(k);
          agent::StepRunner runner;
          results[ks] = runner.run(specs[ks], {}, [&](const agent::StepProgress& p) {
            const auto now = static_cast<std::int64_t>(p.in_flight);
            held[ks] = std::max(held[ks], now);
            in_flight[ks].store(now, std::memory_order_relaxed);
            std::int64_t total = 0;
            for (const auto& f : in_flight) total += f.load(std::memory_order_relaxed);
            if (total >= streams) {
              const std::int64_t rss = bench::rss_kib();
              std::int64_t seen = rss_peak.load();
              while (rss > seen && !rss_peak.compare_exchange_weak(seen, rss)) {
              }
            }
          });
        });
      for (auto& t : threads) t.join();
    }
    Run run;
    analysis::LogHistogram itl;
    for (int k = 0; k < shards; ++k) {
      const auto& r = results[static_cast<std::size_t>(k)];
      if (!r.fatal_error.empty()) {
        std::cerr << "step failed (shard " << k << "): " << r.fatal_error << "\n";
        return 1;
      }
      run.held += held[static_cast<std::size_t>(k)];
      run.connections_opened += r.connections_opened;
      itl.merge(r.itl_ns);
      run.utilisation += r.cpu.thread_utilisation();
      run.preemptions += r.cpu.involuntary_context_switches;
      run.schedule_lag_p99_ms =
          std::max(run.schedule_lag_p99_ms, static_cast<double>(r.schedule_lag.p99_ns) / 1e6);
    }
    const double truth_ms = interval_ms;
    if (token_times) {
      // Exact gaps of ok requests intended in the window (the histogram's population).
      std::vector<std::int64_t> gaps;
      for (const auto& r : results)
        for (const auto& s : r.samples) {
          if (!s.ok() || s.t_intended_ns < r.window_start_ns || s.t_intended_ns >= r.window_end_ns)
            continue;
          for (std::size_t k = 1; k < s.token_times_ns.size(); ++k)
            gaps.push_back(s.token_times_ns[k] - s.token_times_ns[k - 1]);
        }
      if (timeline) {
        std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> bins;  // worst, count
        const std::int64_t epoch = results.front().window_start_ns;
        const std::int64_t step = static_cast<std::int64_t>(interval_ms) * 1'000'000;
        for (const auto& r : results)
          for (const auto& s : r.samples) {
            if (!s.ok() || s.token_times_ns.empty()) continue;
            const std::int64_t t0 = s.token_times_ns.front();
            for (std::size_t k = 1; k < s.token_times_ns.size(); ++k) {
              const std::int64_t t = s.token_times_ns[k];
              const std::int64_t late = t - t0 - static_cast<std::int64_t>(k) * step;
              auto& b = bins[(t - epoch) / 100'000'000];
              b.first = std::max(b.first, late);
              ++b.second;
            }
          }
        std::printf(
            "timeline (100 ms bins from the window start): bin, tokens, worst lateness ms\n");
        for (const auto& [bin, b] : bins)
          std::printf("  %6.1f s  %7lld  %8.3f\n", static_cast<double>(bin) / 10.0,
                      static_cast<long long>(b.second), static_cast<double>(b.first) / 1e6);
      }
      std::sort(gaps.begin(), gaps.end());
      auto q = [&](double f) {
        if (gaps.empty()) return 0.0;
        const auto i = static_cast<std::size_t>(f * static_cast<double>(gaps.size() - 1));
        return static_cast<double>(gaps[i]) / 1e6;
      };
      run.itl_p50_ms = q(0.5);
      run.itl_p99_ms = q(0.99);
      run.itl_p999_ms = q(0.999);
      run.itl_p1_ms = q(0.01);
      run.itl_max_ms = q(1.0);
    } else if (itl.count() > 0) {
      run.itl_p50_ms = itl.quantile(0.5) / 1e6;
      run.itl_p99_ms = itl.quantile(0.99) / 1e6;
      run.itl_p999_ms = itl.quantile(0.999) / 1e6;
      run.itl_p1_ms = itl.quantile(0.01) / 1e6;
      run.itl_max_ms = itl.max() / 1e6;
    }
    run.err_p99_ms =
        std::max(std::abs(run.itl_p99_ms - truth_ms), std::abs(truth_ms - run.itl_p1_ms));
    run.gaps = itl.count();
    run.kib_per_request = static_cast<double>(rss_peak.load() - rss0) / streams;
    for (const auto& r : results)
      for (const auto& s : r.samples) {
        run.token_events += s.token_events;
        if (s.ok())
          ++run.ok;
        else if (s.error == analysis::ErrorClass::kCancelled)
          ++run.cancelled;
        else {
          ++run.failed;
          if (run.first_error.empty()) run.first_error = s.error_message;
        }
      }
    runs.push_back(run);
  }
  const std::int64_t server_cpu_ns = server.stop();
  std::uint64_t token_events = 0;
  for (const auto& r : runs) token_events += r.token_events;

  std::printf(
      "bench_concurrency: %d streams, one event per stream every %d ms (truth, %s paced server, "
      "%s phases), %d agent shard(s), %d (+-%d) tokens per request, tail delay %d ms, %.0f s "
      "window, %d run(s), ITL from %s\n",
      streams, interval_ms, server_kind.c_str(), phases.c_str(), shards, tokens, length_spread,
      tail_delay_ms, seconds, repeat,
      token_times ? "exact per-token times (memory includes them)" : "the LogHistogram (+-1%)");
  std::printf(
      "| run | held | ok | failed | cancelled | ITL gaps | P1 ms | P50 ms | P99 ms | P99.9 ms | "
      "max ms | "
      "P99 error ms | KiB/request | agent util | preempt | sched lag P99 ms |\n");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::printf(
        "| %zu | %lld | %llu | %llu | %llu | %llu | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f "
        "| %.2f | %lld | %.3f |\n",
        i + 1, static_cast<long long>(r.held), static_cast<unsigned long long>(r.ok),
        static_cast<unsigned long long>(r.failed), static_cast<unsigned long long>(r.cancelled),
        static_cast<unsigned long long>(r.gaps), r.itl_p1_ms, r.itl_p50_ms, r.itl_p99_ms,
        r.itl_p999_ms, r.itl_max_ms, r.err_p99_ms, r.kib_per_request, r.utilisation,
        static_cast<long long>(r.preemptions), r.schedule_lag_p99_ms);
    std::printf("    connections opened: %llu\n",
                static_cast<unsigned long long>(r.connections_opened));
    if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
  }
  std::printf("paced server process CPU: %.2f s over all runs, %.2f us per token event received\n",
              static_cast<double>(server_cpu_ns) / 1e9,
              token_events
                  ? static_cast<double>(server_cpu_ns) / 1e3 / static_cast<double>(token_events)
                  : 0.0);
  std::printf(
      "targets: held >= 10000, P99 error <= 1 ms, <= 16 KiB/request "
      "(LogHistogram quantiles are within 1%% relative, i.e. +-0.5 ms at 50 ms)\n");
  return 0;
}
