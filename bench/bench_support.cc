#include "bench/bench_support.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>

namespace llmcap::bench {

namespace {
std::int64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size());
  }
  return -1;
}
}  // namespace

std::int64_t rss_kib() { return status_kib("VmRSS:"); }
std::int64_t peak_rss_kib() { return status_kib("VmHWM:"); }

std::int64_t raise_nofile(std::int64_t want) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  const rlim_t target = std::min<rlim_t>(static_cast<rlim_t>(want), rl.rlim_max);
  if (rl.rlim_cur < target) {
    rl.rlim_cur = target;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<std::int64_t>(rl.rlim_cur);
}

void serve_firehose(const FirehoseOptions& options, int port_fd) {
  raise_nofile(static_cast<std::int64_t>(options.max_connections) + 256);
  boost::asio::io_context io(1);
  FirehoseServer server(io, options);
  server.start();
  const std::uint16_t port = server.port();
  if (write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) return;
  close(port_fd);
  // On SIGTERM (ForkedServer::stop) report what the server saw, so a timing error can be
  // told apart: late server timers (pacing lag) vs the client.
  boost::asio::signal_set signals(io, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    std::fprintf(stderr,
                 "firehose: %llu requests, %llu token events, worst pacing lag %.3f ms, "
                 "server's own gap error P50/P99 %.3f/%.3f ms\n",
                 static_cast<unsigned long long>(server.requests()),
                 static_cast<unsigned long long>(server.events_sent()),
                 static_cast<double>(server.max_pacing_lag_ns()) / 1e6,
                 server.pacing_gap_error_ns(0.5) / 1e6, server.pacing_gap_error_ns(0.99) / 1e6);
    server.stop();
    io.stop();
  });
  auto guard = boost::asio::make_work_guard(io);
  io.run();
}

bool paced_server_flags_ok(const std::string& server, const std::string& phases) {
  if (server != "asio" && server != "raw") {
    std::cerr << "--server: must be asio or raw\n";
    return false;
  }
  if (phases != "aligned" && phases != "spread") {
    std::cerr << "--phases: must be aligned or spread\n";
    return false;
  }
  if (phases == "spread" && server != "raw") {
    std::cerr << "--phases=spread: needs --server=raw\n";
    return false;
  }
  return true;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

agent::StepSpec local_step(std::uint16_t port, std::int32_t concurrency, std::int32_t input_tokens,
                           std::int32_t output_tokens, double duration_s) {
  agent::StepSpec s;
  s.target.base_url = "http://127.0.0.1:" + std::to_string(port);
  s.target.api = agent::ApiKind::kCompletions;
  s.target.model = "firehose";
  s.workload.calibrate = false;
  s.workload.input_tokens = analysis::LengthDistribution::fixed(input_tokens);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(output_tokens);
  s.load.kind = agent::LoadKind::kClosed;
  s.load.concurrency = concurrency;
  s.warmup_s = 0;
  s.duration_s = duration_s;
  s.drain = agent::DrainPolicy::kCancel;
  s.progress_interval_ms = 200;
  return s;
}

std::uint64_t total_token_events(const std::vector<analysis::RequestSample>& samples) {
  std::uint64_t n = 0;
  for (const auto& s : samples) n += s.token_events;
  return n;
}

}  // namespace llmcap::bench
