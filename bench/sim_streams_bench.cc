// bench_sim_streams: can the simulator serve --streams concurrent streams in real time on one
// core (issue 10)? SimServer runs in a child process on a single io_context thread (pinned to
// one CPU with --pin=1); one StepRunner in this process keeps --streams requests in flight.
// Real time means the simulator's thread is not saturated — its CPU stays below one core —
// so its absolute-deadline step timers fire on time and the ITL clients see is the modelled
// step time. Reports the simulator's CPU utilisation, tokens/s served and the client's ITL.
// Target: ≥ 2,000 concurrent simulated streams in real time on one core.
// Usage: bench_sim_streams [--streams=2000] [--seconds=10] [--input=32] [--output=64]
//                          [--hardware=h200] [--model=qwen2.5-7b] [--pin=1]
#include <sched.h>

#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "agent/step_runner.h"
#include "bench/bench_support.h"
#include "sim/sim_server.h"

namespace {
using namespace llmcap;

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}
}  // namespace

int main(int argc, char** argv) {
  bench::BenchFlags flags(argc, argv);
  const int streams = static_cast<int>(flags.number("streams", 2000));
  const double seconds = flags.number("seconds", 10);
  const int input = static_cast<int>(flags.number("input", 32));
  const int output = static_cast<int>(flags.number("output", 64));
  const std::string hardware = flags.text("hardware", "h200");
  const std::string model = flags.text("model", "qwen2.5-7b");
  const bool pin = flags.number("pin", 1) != 0;
  flags.check_all_used();
  bench::raise_nofile(static_cast<std::int64_t>(streams) * 2 + 256);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);

  sim::SimOptions so;
  so.hardware = hardware;
  so.model = model;
  so.port = 0;
  so.seed = 1;
  so.max_num_seqs = streams;
  so.max_num_batched_tokens = 8192;
  bench::ForkedServer server;
  std::string describe;
  server.start([&](int fd) {
    if (pin && cpus > 1) pin_to(1);
    bench::raise_nofile(static_cast<std::int64_t>(streams) * 2 + 256);
    boost::asio::io_context io(1);
    sim::SimServer s(io, so);
    s.start();
    std::cerr << "sim: " << s.describe() << "\n";
    const std::uint16_t port = s.port();
    if (write(fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) return;
    close(fd);
    auto guard = boost::asio::make_work_guard(io);
    io.run();
  });
  if (pin && cpus > 1) pin_to(0);

  auto spec = bench::local_step(server.port(), streams, input, output, seconds);
  spec.target.model = model;
  spec.drain = agent::DrainPolicy::kWait;
  spec.drain_timeout_s = 60;
  spec.load.in_flight_cap = streams;
  const auto t0 = std::chrono::steady_clock::now();
  agent::StepRunner runner;
  std::int64_t held = 0;
  const auto r = runner.run(spec, {}, [&](const agent::StepProgress& p) {
    held = std::max<std::int64_t>(held, static_cast<std::int64_t>(p.in_flight));
  });
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t sim_cpu_ns = server.stop();
  if (!r.fatal_error.empty()) {
    std::cerr << "step failed: " << r.fatal_error << "\n";
    return 1;
  }
  std::uint64_t ok = 0, failed = 0;
  for (const auto& s : r.samples) {
    if (s.ok())
      ++ok;
    else if (s.error != analysis::ErrorClass::kCancelled)
      ++failed;
  }
  const double tokens = static_cast<double>(bench::total_token_events(r.samples));
  std::printf(
      "bench_sim_streams: %s / %s, %d streams (closed loop), %d in / %d out tokens, %.0f s "
      "window, simulator on one io thread%s\n",
      hardware.c_str(), model.c_str(), streams, input, output, seconds,
      pin ? " pinned to CPU 1 (client on CPU 0)" : "");
  std::printf(
      "| held | ok | failed | token events/s | sim CPU (s) | sim util (of 1 core) | ITL P50 ms | "
      "ITL P99 ms | ITL max ms | client util |\n");
  std::printf("| %lld | %llu | %llu | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
              static_cast<long long>(held), static_cast<unsigned long long>(ok),
              static_cast<unsigned long long>(failed), tokens / wall_s,
              static_cast<double>(sim_cpu_ns) / 1e9, static_cast<double>(sim_cpu_ns) / 1e9 / wall_s,
              r.itl_ns.quantile(0.5) / 1e6, r.itl_ns.quantile(0.99) / 1e6, r.itl_ns.max() / 1e6,
              r.cpu.thread_utilisation());
  std::printf("target: held >= 2000 with sim util < 1.0 (the simulator keeps up in real time)\n");
  return failed == 0 ? 0 : 1;
}
