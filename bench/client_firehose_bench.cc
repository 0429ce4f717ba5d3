// bench_client_firehose: the load generator's own ceiling (issue 10). A firehose server in a
// child process streams pre-built token events as fast as loopback takes them; one StepRunner
// (one agent I/O thread) parses, decodes and timestamps them. Two scenarios:
//   tokens   — long streams (--tokens events each): token events per second of agent-thread CPU
//              (target ≥ 1,000,000 /s per core, i.e. ≤ 1 µs CPU per event);
//   requests — 1-token requests back to back: agent-thread CPU per request (target ≤ 20 µs).
// Each scenario is repeated --repeat times; the table shows the median and the range.
// Usage: bench_client_firehose [--seconds=3] [--streams=4] [--tokens=4096] [--repeat=3]
//                              [--events-per-write=64] [--request-streams=16]
//                              [--only=1|2]   (1: token streams only, 2: 1-token requests only)
//        bench_client_firehose --serve=1 [--interval-ms=N]   (firehose only, for manual probes)
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include "agent/step_runner.h"
#include "bench/bench_support.h"

namespace {

using namespace llmcap;

struct Run {
  double events_per_cpu_s = 0;  // token events per second of agent-thread CPU
  double events_per_wall_s = 0;
  double cpu_per_event_ns = 0;
  double requests_per_wall_s = 0;
  double cpu_per_request_us = 0;
  double utilisation = 0;
  std::uint64_t failed = 0;
};

Run run_once(const agent::StepSpec& spec) {
  agent::StepRunner runner;
  const auto r = runner.run(spec);
  if (!r.fatal_error.empty()) {
    std::cerr << "step failed: " << r.fatal_error << "\n";
    std::exit(1);
  }
  Run out;
  const double events = static_cast<double>(bench::total_token_events(r.samples));
  const double cpu_s = static_cast<double>(r.cpu.thread_cpu_ns) / 1e9;
  const double wall_s = static_cast<double>(r.cpu.wall_ns) / 1e9;
  std::uint64_t completed = 0;
  for (const auto& s : r.samples) completed += s.ok() ? 1 : 0;
  out.events_per_cpu_s = cpu_s > 0 ? events / cpu_s : 0;
  out.events_per_wall_s = wall_s > 0 ? events / wall_s : 0;
  out.cpu_per_event_ns = events > 0 ? static_cast<double>(r.cpu.thread_cpu_ns) / events : 0;
  out.requests_per_wall_s = wall_s > 0 ? static_cast<double>(completed) / wall_s : 0;
  out.cpu_per_request_us = completed > 0 ? static_cast<double>(r.cpu.thread_cpu_ns) / 1e3 /
                                               static_cast<double>(completed)
                                         : 0;
  out.utilisation = r.cpu.thread_utilisation();
  out.failed = r.counts.failed;
  return out;
}

template <typename F>
void row(const char* name, const std::vector<Run>& runs, F field, const char* unit) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(field(r));
  if (v.empty()) return;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::printf("| %-38s | %14.3f | %14.3f .. %-14.3f | %s\n", name, bench::median(v), *lo, *hi,
              unit);
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchFlags flags(argc, argv);
  const double seconds = flags.number("seconds", 3);
  const int streams = static_cast<int>(flags.number("streams", 4));
  const int tokens = static_cast<int>(flags.number("tokens", 4096));
  const int repeat = static_cast<int>(flags.number("repeat", 3));
  const int per_write = static_cast<int>(flags.number("events-per-write", 64));
  const int request_streams = static_cast<int>(flags.number("request-streams", 16));
  // --serve=1: only run the firehose in the foreground (prints its port), for manual probes.
  const bool serve_only = flags.number("serve", 0) != 0;
  const int interval_ms = static_cast<int>(flags.number("interval-ms", 0));
  // --only=1: token streams only, --only=2: 1-token requests only (for profiling one of them).
  const int only = static_cast<int>(flags.number("only", 0));
  flags.check_all_used();

  bench::FirehoseOptions fo;
  fo.events_per_write = per_write;
  fo.interval_ms = interval_ms;
  if (serve_only) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    std::thread([&] {
      std::uint16_t port = 0;
      if (read(fds[0], &port, sizeof port) == static_cast<ssize_t>(sizeof port))
        std::printf("firehose listening on http://127.0.0.1:%u\n", port);
      std::fflush(stdout);
    }).detach();
    bench::serve_firehose(fo, fds[1]);
    return 0;
  }
  bench::ForkedServer server;
  server.start([&](int fd) { bench::serve_firehose(fo, fd); });

  std::vector<Run> token_runs, request_runs;
  for (int i = 0; i < repeat; ++i) {
    if (only != 2)
      token_runs.push_back(
          run_once(bench::local_step(server.port(), streams, 16, tokens, seconds)));
    if (only != 1)
      request_runs.push_back(
          run_once(bench::local_step(server.port(), request_streams, 16, 1, seconds)));
  }
  const std::int64_t server_cpu_ns = server.stop();

  std::printf(
      "bench_client_firehose: %d streams x %d tokens (%d events per server write), "
      "%d x 1-token streams, %.1f s per run, %d runs (median, min .. max)\n",
      streams, tokens, per_write, request_streams, seconds, repeat);
  std::printf("| %-38s | %14s | %-32s | unit\n", "metric", "median", "range");
  row(
      "token events / agent CPU second", token_runs,
      [](const Run& r) { return r.events_per_cpu_s; }, "events/s (target >= 1e6)");
  row(
      "token events / wall second", token_runs, [](const Run& r) { return r.events_per_wall_s; },
      "events/s");
  row(
      "agent CPU per token event", token_runs, [](const Run& r) { return r.cpu_per_event_ns; },
      "ns (target <= 1000)");
  row(
      "agent thread utilisation (tokens)", token_runs, [](const Run& r) { return r.utilisation; },
      "fraction of a core");
  row(
      "1-token requests / wall second", request_runs,
      [](const Run& r) { return r.requests_per_wall_s; }, "req/s");
  row(
      "agent CPU per 1-token request", request_runs,
      [](const Run& r) { return r.cpu_per_request_us; }, "us (target <= 20)");
  row(
      "agent thread utilisation (requests)", request_runs,
      [](const Run& r) { return r.utilisation; }, "fraction of a core");
  std::uint64_t failed = 0;
  for (const auto& r : token_runs) failed += r.failed;
  for (const auto& r : request_runs) failed += r.failed;
  std::printf("failed requests: %llu; firehose server CPU over all runs: %.2f s\n",
              static_cast<unsigned long long>(failed), static_cast<double>(server_cpu_ns) / 1e9);
  return failed == 0 ? 0 : 1;
}
